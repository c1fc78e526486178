package steps

// WaitStep holds back the steps after it until the steps before it have
// finished.
type WaitStep struct {
	// ContinueOnFailure lets the later steps run even if an earlier one
	// failed.
	ContinueOnFailure bool
	If                string
	Key               string

	DependsOn              []Dependency
	AllowDependencyFailure bool
}

func (WaitStep) isStep() {}

// value always writes the object form, {"wait": null, ...}, so that every
// step in the output is an object.
func (w WaitStep) value() map[string]any {
	o := object{"wait": nil}
	o.setTrue("continue_on_failure", w.ContinueOnFailure)
	o.setString("if", w.If)
	o.setString("key", w.Key)
	o.setDependsOn(w.DependsOn)
	o.setTrue("allow_dependency_failure", w.AllowDependencyFailure)
	return o
}
