package bindgen

import (
	"bytes"
	"fmt"
	"strings"
)

// write writes the script's binding: its Args struct with Keys, Args and
// Run, its Hold struct if it is a batch renewal script, its reply codes and
// its reply struct.
func (s *script) write(b *bytes.Buffer) {
	n, f := s.name, s.file
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n// %sArgs are the KEYS and ARGV of %s (script %s).\ntype %sArgs struct {\n", n, f, n, n)
	for _, p := range s.keys {
		p.writeField(b, "KEYS")
	}
	for _, p := range s.argv {
		p.writeField(b, "ARGV")
	}
	pf("}\n")

	pf("\n// Keys returns %s's KEYS, in order.\nfunc (a %sArgs) Keys() []string {\n", f, n)
	writeList(b, "keys", "string", s.keys)
	pf("}\n")
	pf("\n// Args returns %s's ARGV, in order.\nfunc (a %sArgs) Args() []any {\n", f, n)
	writeList(b, "args", "any", s.argv)
	pf("}\n")
	s.writeCommand(b)

	if s.hold != nil {
		s.writeHold(b)
	}

	s.writeCodes(b)
	if s.intReply != "" {
		pf("\n// Run runs %s with a on r and returns its reply, %s.\n", f, s.intReply)
		pf("func (a %sArgs) Run(ctx context.Context, r Runner) (int64, error) {\n", n)
		pf("\treturn run(ctx, r, a.command()).Int64()\n}\n")
		return
	}
	s.writeReply(b)
}

// writeCodes writes the script's named reply codes as constants.
func (s *script) writeCodes(b *bytes.Buffer) {
	if len(s.codes) == 0 {
		return
	}
	n, f := s.name, s.file
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n// Reply codes of %s.\nconst (\n", f)
	for _, c := range s.codes {
		doc := c.doc
		if doc == "" {
			doc = "see " + f
		}
		pf("\t// %s%s is the reply code %d: %s.\n\t%s%s = %d\n", n, c.name, c.value, doc, n, c.name, c.value)
	}
	pf(")\n")
}

// writeReply writes an array reply's struct and the Run method that
// decodes it.
func (s *script) writeReply(b *bytes.Buffer) {
	n, f := s.name, s.file
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	required, mixed := s.writeReplyStruct(b)
	pf("\n// Run runs %s with a on r and decodes its reply.\n", f)
	pf("func (a %sArgs) Run(ctx context.Context, r Runner) (%sReply, error) {\n", n, n)
	if mixed {
		pf("\tres, err := run(ctx, r, a.command()).Slice()\n")
	} else {
		pf("\tres, err := run(ctx, r, a.command()).Int64Slice()\n")
	}
	pf("\tvar rep %sReply\n\tif err != nil {\n\t\treturn rep, err\n\t}\n", n)
	pf("\tif len(res) < %d {\n\t\treturn rep, fmt.Errorf(\"unexpected reply %%v\", res)\n\t}\n", required)
	for i, r := range s.reply {
		val := fmt.Sprintf("res[%d]", i)
		if mixed {
			val = fmt.Sprintf("replyInt(res[%d])", i)
			if r.typ == "string" {
				val = fmt.Sprintf("replyString(res[%d])", i)
			}
		}
		switch {
		case r.rest:
			pf("\trep.%s = res[%d:]\n", r.name, i)
		case r.optional:
			pf("\tif len(res) > %d {\n\t\trep.%s = %s\n\t}\n", i, r.name, val)
		default:
			pf("\trep.%s = %s\n", r.name, val)
		}
	}
	pf("\treturn rep, nil\n}\n")
}

// writeReplyStruct writes the reply's struct and returns how many of its
// fields are required (neither optional nor the rest) and whether it
// mixes strings with integers (decoded from a []any, not an []int64).
func (s *script) writeReplyStruct(b *bytes.Buffer) (required int, mixed bool) {
	n, f := s.name, s.file
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n// %sReply is %s's reply.\ntype %sReply struct {\n", n, f, n)
	for i, r := range s.reply {
		typ, doc := r.typ, fmt.Sprintf("element %d of the reply", i+1)
		switch {
		case r.rest:
			typ, doc = "[]int64", fmt.Sprintf("elements %d.. of the reply", i+1)
		case r.optional:
			doc += " (zero when the reply is shorter)"
		default:
			required++
		}
		mixed = mixed || r.typ == "string"
		pf("\t// %s is %s.\n\t%s %s\n", r.name, doc, r.name, typ)
	}
	pf("}\n")
	return required, mixed
}

// writeCommand writes the command method: the whole EVALSHA command
// (Command) in one slice, the KEYS and ARGV as Keys and Args give them,
// so that a call costs one slice instead of three.
func (s *script) writeCommand(b *bytes.Buffer) {
	n, f := s.name, s.file
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n// command returns %s's call as one EVALSHA command (Command).\nfunc (a %sArgs) command() Command {\n", f, n)
	s.writeCommandArgs(b)
	pf("\targs[0], args[1] = evalsha, sha(%s)\n", n)
	// An optional entry left empty leaves out the entries after it in its
	// list (as Keys and Args do): they go in a block of their own.
	open := 0
	for _, p := range s.keys {
		switch {
		case p.variadic:
			pf("\tfor i := range p.%s {\n\t\targs = append(args, &p.%s[i])\n\t}\n", p.name, p.name)
		case p.optional:
			pf("\tif p.%s != \"\" {\n\targs = append(args, &p.%s)\n", p.name, p.name)
			open++
		default:
			pf("\targs = append(args, &p.%s)\n", p.name)
		}
	}
	pf("%s", strings.Repeat("}\n", open))
	pf("\targs[2] = len(args) - 3\n")
	open = 0
	for _, p := range s.argv {
		switch {
		case p.variadic:
			pf("\tfor i := range p.%s {\n\t\targs = append(args, %s)\n\t}\n", p.name, boxPtr(p.typ, "p."+p.name+"[i]"))
		case p.optional:
			pf("\tif p.%s != \"\" {\n\targs = append(args, %s)\n", p.name, boxPtr(p.typ, "p."+p.name))
			open++
		default:
			pf("\targs = append(args, %s)\n", boxPtr(p.typ, "p."+p.name))
		}
	}
	pf("%s", strings.Repeat("}\n", open))
	pf("\treturn Command{Script: %s, Args: args}\n}\n", n)
}

// writeCommandArgs writes the start of the command method: args, the
// command's slice with room for every entry, and p, the one copy of the
// arguments that its entries point into (a string or an int64 is not
// boxed each). Without variadic entries the two are one allocation (a
// struct of the copy and an array); with them, two.
func (s *script) writeCommandArgs(b *bytes.Buffer) {
	n := s.name
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	size := 3 + len(s.keys) + len(s.argv)
	var variadic []string
	for _, p := range append(append([]param(nil), s.keys...), s.argv...) {
		if p.variadic {
			variadic = append(variadic, "+len(a."+p.name+")")
		}
	}
	if len(variadic) == 0 {
		pf("\tc := &struct {\n\t\ta    %sArgs\n\t\targs [%d]any\n\t}{a: a} // one allocation for the copy and the slice\n", n, size)
		pf("\targs, p := c.args[:3], &c.a\n")
		return
	}
	pf("\targs := make([]any, 3, %d%s)\n", size, strings.Join(variadic, ""))
	pf("\tp := &a // the arguments point into this one copy: a string or an int64 is not boxed each\n")
}

// writeHold writes the per-hold part of a batch renewal script: a struct
// of the hold's named entries and its Renewal method (lua.Renewal).
func (s *script) writeHold(b *bytes.Buffer) {
	n, f := s.name, s.file
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var keys, args []param
	for _, p := range s.hold {
		if p.key {
			keys = append(keys, p)
		} else {
			args = append(args, p)
		}
	}
	pf("\n// %sHold is one hold's entries in a %s batch (the common renewal\n// encoding: the watchdog adds the counts and the hold count).\ntype %sHold struct {\n", n, f, n)
	for _, p := range keys {
		p.writeField(b, "hold's KEYS")
	}
	for _, p := range args {
		p.writeField(b, "hold's ARGV")
	}
	pf("}\n")
	pf("\n// Renewal returns %s and the hold's KEYS and ARGV, in order.\n", f)
	pf("func (a %sHold) Renewal() (*redis.Script, []string, []any) {\n", n)
	pf("\tkeys := []string{")
	for i, p := range keys {
		if i > 0 {
			pf(", ")
		}
		pf("a.%s", p.name)
	}
	pf("}\n\targs := []any{")
	for i, p := range args {
		if i > 0 {
			pf(", ")
		}
		pf("%s", box(p.typ, "a."+p.name))
	}
	pf("}\n\treturn %s, keys, args\n}\n", n)
}

// writeList writes the body of Keys or Args: the entries in order, a
// variadic one's values spread, optional ones (trailing) left out from
// the first empty one on.
func writeList(b *bytes.Buffer, v, elem string, list []param) {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\t%s := make([]%s, 0, %d", v, elem, len(list))
	for _, p := range list {
		if p.variadic {
			pf("+len(a.%s)", p.name)
		}
	}
	pf(")\n")
	for _, p := range list {
		val := "a." + p.name
		if elem == "any" {
			val = box(p.typ, "a."+p.name)
		}
		switch {
		case p.variadic && elem == "string":
			pf("\t%s = append(%s, a.%s...)\n", v, v, p.name)
		case p.variadic:
			pf("\tfor _, x := range a.%s {\n\t\t%s = append(%s, %s)\n\t}\n", p.name, v, v, box(p.typ, "x"))
		case p.optional:
			pf("\tif a.%s == \"\" {\n\t\treturn %s\n\t}\n\t%s = append(%s, %s)\n", p.name, v, v, v, val)
		default:
			pf("\t%s = append(%s, %s)\n", v, v, val)
		}
	}
	pf("\treturn %s\n", v)
}

// writeField writes the struct field of entry p of list ("KEYS", "ARGV").
func (p param) writeField(b *bytes.Buffer, list string) {
	idx, typ, doc := fmt.Sprintf("%s[%d]", list, p.index), p.typ, p.doc
	if p.variadic {
		idx, typ = fmt.Sprintf("%s[%d..]", list, p.index), "[]"+typ
	}
	if p.optional {
		doc += " (left out when empty)"
	}
	fmt.Fprintf(b, "\t// %s is %s: %s.\n\t%s %s\n", p.name, idx, strings.TrimSuffix(doc, "."), p.name, typ)
}

// boxPtr returns the expression that passes the field v, of type typ, as
// a command argument without boxing it: flags as "1" and "0", strings and
// int64s as pointers to the field (go-redis writes *string and *int64 as
// it writes their values), anything else as it is.
func boxPtr(typ, v string) string {
	switch typ {
	case "bool":
		return "flag(" + v + ")"
	case "string", "int64":
		return "&" + v
	}
	return v
}

// box returns the expression that passes v, of type typ, as a script
// argument: flags as "1" and "0", strings boxed once when they are a
// common constant.
func box(typ, v string) string {
	switch typ {
	case "bool":
		return "flag(" + v + ")"
	case "string":
		return "str(" + v + ")"
	}
	return v
}
