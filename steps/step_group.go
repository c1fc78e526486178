package steps

// GroupStep shows its steps together under one name. Groups cannot be
// nested.
type GroupStep struct {
	// Group is the name shown in the UI.
	Group string
	Key   string

	DependsOn              []Dependency
	AllowDependencyFailure bool
	If                     string

	Steps []Step
}

func (GroupStep) isStep() {}

func (g GroupStep) value() map[string]any {
	o := object{"group": g.Group}
	o.setString("key", g.Key)
	o.setDependsOn(g.DependsOn)
	o.setTrue("allow_dependency_failure", g.AllowDependencyFailure)
	o.setString("if", g.If)
	o["steps"] = stepValues(g.Steps)
	return o
}
