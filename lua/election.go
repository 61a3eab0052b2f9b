package lua

// Scripts of package election.
var (
	// ElectionProclaim records what the leader of an election proclaims; see election_proclaim.lua.
	ElectionProclaim = load("election_proclaim.lua")
	// ElectionLeader reads an election's leader; see election_leader.lua.
	ElectionLeader = load("election_leader.lua")
	// ElectionDelete deletes an election's keys, refused while its lock
	// is held unless forced; see election_delete.lua.
	ElectionDelete = load("election_delete.lua", types, request, lockHelpers, fairHelpers)
)
