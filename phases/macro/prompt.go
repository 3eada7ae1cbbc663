package macro

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
)

// words are common short English words; most are one token with a leading
// space in the usual BPE vocabularies, so a prompt of N words is close to N
// tokens before calibration.
var words = strings.Fields(`the of and to in is you that it he was for on are as with his they at be
this have from or one had by word but not what all were we when your can said there use an each
which she do how their if will up other about out many then them these so some her would make like
him into time has look two more write go see number no way could people my than first water been
call who oil its now find long down day did get come made may part over new sound take only little
work know place year live me back give most very after thing our just name good man think
say great where help through much before line right too mean old any same tell boy follow came want
show also around form three small set put end does another well large must big even such because
turn here why ask went men read need land home us move try kind hand picture again change
off play spell air away animal house point page letter mother answer found study still learn should`)

// promptGen makes prompts of random words. It is used from one goroutine.
type promptGen struct {
	rng          *rand.Rand
	tokensPerWrd float64 // from /tokenize calibration, 1 when unknown
	sb           strings.Builder
}

func newPromptGen(seed int64) *promptGen {
	return &promptGen{rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)), tokensPerWrd: 1}
}

// make returns a prompt of about tokens tokens.
func (g *promptGen) make(tokens int) string {
	n := int(math.Round(float64(tokens) / g.tokensPerWrd))
	if n < 1 {
		n = 1
	}
	return g.words(n)
}

func (g *promptGen) words(n int) string {
	g.sb.Reset()
	for i := 0; i < n; i++ {
		if i > 0 {
			g.sb.WriteByte(' ')
		}
		g.sb.WriteString(words[g.rng.IntN(len(words))])
	}
	return g.sb.String()
}

// calibrate measures tokens per word with the server's /tokenize, once. It
// returns false when the server has none (the estimate stays 1 per word).
func (g *promptGen) calibrate(ctx context.Context, c *client, tokens int) (float64, bool) {
	n := tokens
	if n < 64 {
		n = 64
	}
	count, ok := c.tokenCount(ctx, g.words(n), true)
	if !ok {
		return 1, false
	}
	g.tokensPerWrd = float64(count) / float64(n)
	return g.tokensPerWrd, true
}

// RandomWords is n words drawn as the sweep draws its prompts, from a
// generator seeded with seed: the same seed gives the same words.
func RandomWords(seed uint64, n int) string {
	return newPromptGen(int64(seed)).words(max(n, 1))
}
