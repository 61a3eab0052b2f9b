package chaos

// parts are the workload's parts beside the workers' random operations:
// the election's observer (election.go) and the job schedulers
// (sched.go). The workers campaign in the election and write the fences
// themselves (workload.go, fences.go).
type parts struct {
	obs   *observer
	sched *schedulers
}

// startParts starts the observer and the schedulers, and in the single
// topology the listener of evicted keys (statefaults.go).
func (r *run) startParts() {
	r.startObserver()
	r.startSchedulers()
	if r.cfg.Topology == Single {
		r.listenEvictions()
	}
}
