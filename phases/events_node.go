package phases

// NodeTagged is an event that can name the node of a deployment it
// happened on: WithNode returns a copy of it naming node.
type NodeTagged interface{ WithNode(node string) any }

// WithNode returns l naming node.
func (l LogLine) WithNode(node string) any { l.Node = node; return l }

// WithNode returns m naming node.
func (m Milestone) WithNode(node string) any { m.Node = node; return m }

// WithNode returns s naming node.
func (s Stall) WithNode(node string) any { s.Node = node; return s }

// WithNode returns f naming node.
func (f LoadFailure) WithNode(node string) any { f.Node = node; return f }

// WithNode returns e naming node.
func (e ServerEvent) WithNode(node string) any { e.Node = node; return e }

// WithNode returns d naming node.
func (d Diagnosis) WithNode(node string) any { d.Node = node; return d }

// WithNode returns s with its stall and failure (copies) naming node.
func (s LoadState) WithNode(node string) any {
	if s.Stall != nil {
		st := *s.Stall
		st.Node, s.Stall = node, &st
	}
	if s.Failure != nil {
		f := *s.Failure
		f.Node, s.Failure = node, &f
	}
	return s
}
