package fleet

import (
	"fmt"

	"github.com/profdeck/profdeck/phases"
)

// serverOf is the server's side of a merged level. The server is one,
// whichever agent read its /metrics: the first agent's level that read it
// stands for the level (its scrapes, scheduler, step mix), and note says
// whose it is. That window counted one agent's tokens, so the client's and
// the server's tokens are not compared.
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
	if len(parts) > 1 {
		sl.WindowClientTokens, sl.TokensAgree = 0, false
		sl.TokenAgreement = fmt.Sprintf("not compared: the server's window is load agent %s's, and each of the %d agents counted only its own tokens", who, len(parts))
	}
	return sl, fmt.Sprintf("the server's figures are from load agent %s's reads of its /metrics", who)
}
