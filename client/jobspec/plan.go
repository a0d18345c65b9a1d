package jobspec

import (
	"github.com/ringjob/ringjob/client"
)

// Input is the body of a plan or apply request for the set. scope adds
// groups whose undeclared jobs prune deletes (--group).
func (s *Set) Input(scope []string, prune bool) client.ApplyInput {
	in := client.ApplyInput{Groups: s.Groups, Jobs: s.Jobs, Scope: scope, Prune: prune}
	if in.Groups == nil {
		in.Groups = []client.ApplyGroup{}
	}
	if in.Jobs == nil {
		in.Jobs = []client.ApplyJob{}
	}
	return in
}

// Explain places the problems a server found in the declaration (an
// invalid plan's error.problems) at their files and lines.
func (s *Set) Explain(ps []client.Problem) Problems {
	out := make(Problems, 0, len(ps))
	for _, p := range ps {
		pos := s.Locate(p.Kind, p.Group, p.Name, p.Field)
		if pos.File == "" {
			pos.File = p.Kind + " " + p.Group
			if p.Kind == "job" {
				pos.File += "/" + p.Name
			}
		}
		out = append(out, Problem{Pos: pos, Field: p.Field, Msg: p.Message})
	}
	return out.sorted()
}
