package lua

// Scripts of package fence.
var (
	// FenceSet writes a fenced value unless a higher token wrote before;
	// see fence_set.lua.
	FenceSet = load("fence_set.lua")
)
