// Package request makes a client's state-changing requests apply at most
// once, whatever the network does to them (see lua/prelude_request.lua):
// each carries an id (Requests.ID, with keys.Request the key of its
// record) and a deadline by the Redis server's clock (Deadline), after
// which a copy that finds no record is refused. A request whose reply was
// lost is re-sent until Redis answers (Resend); an owner's lost release is
// settled before the owner's next operation (Settle); an acquisition whose
// reply was lost is undone (Undo).
//
// Glossary:
//   - deadline: the time by the server's clock after which a copy of a
//     request is refused (deadline.go);
//   - record: a request's result kept under its request key until just
//     past its deadline; a copy of the request returns it (replay);
//   - mark: what a fresh hold's release or undo leaves on its request key
//     (MarkUntil), so that a late copy of its acquisition does nothing;
//   - settle: marking an owner's lost release cancelled (Settle);
//   - undo: the release, in undo mode, of an acquisition whose reply was
//     lost (Undo; core.Lock's undo for the locks).
//
// It imports bg and errs; package core gives each client one Requests.
package request
