package fleet

import (
	"fmt"
	"math"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/phases/macro"
)

// serverOf is the server's side of a merged level. The server is one,
// whichever agent read its /metrics: the first agent's level that read it
// stands for the level (its scrapes, scheduler, step mix), and note says
// whose it is. The client's tokens over the window are all agents' (each
// over its own window: they start together and run the same level).
func serverOf(parts []phases.LevelResult, names []string) (sl *phases.ServerLevel, note string) {
	who := ""
	for i, p := range parts {
		if p.Server != nil && (sl == nil || !sl.Available && p.Server.Available) {
			s := *p.Server
			sl, who = &s, names[i]
		}
	}
	if sl == nil || !sl.Available {
		return sl, ""
	}
	if len(parts) > 1 && sl.WindowS > 0 {
		agree(sl, parts, names, who)
	}
	return sl, fmt.Sprintf("the server's figures are from load agent %s's reads of its /metrics", who)
}

// agree sets the agents' tokens over the window beside the server's and
// says why when they differ by more than macro.AgreeWithin.
func agree(sl *phases.ServerLevel, parts []phases.LevelResult, names []string, who string) {
	var client int64
	for i, p := range parts {
		if p.Server == nil || p.Server.WindowS <= 0 {
			sl.WindowClientTokens, sl.TokensAgree = 0, false
			sl.TokenAgreement = fmt.Sprintf("not compared: load agent %s counted no tokens over a window of the server's", names[i])
			return
		}
		client += p.Server.WindowClientTokens
	}
	sl.WindowClientTokens = client
	diff := (sl.WindowGenerationTokens - float64(client)) / math.Max(float64(client), 1)
	sl.TokensAgree, sl.TokenAgreement = math.Abs(diff) <= macro.AgreeWithin, ""
	if !sl.TokensAgree {
		sl.TokenAgreement = fmt.Sprintf("the server generated %+.0f%% against the %d load agents' tokens (%.0f against %d): "+
			"the server's window is load agent %s's, each agent counted its own", 100*diff, len(parts), sl.WindowGenerationTokens, client, who)
	}
}
