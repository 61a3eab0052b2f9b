package lua

// Scripts of package election.
var (
	// ElectionProclaim records what the leader of an election proclaims; see election_proclaim.lua.
	ElectionProclaim = load("election_proclaim.lua")
	// ElectionLeader reads an election's leader; see election_leader.lua.
	ElectionLeader = load("election_leader.lua")
)
