package macro

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// resolveModel asks /v1/models which models the server has and settles
// cfg.Model. It returns the listed ids (nil when the server lists none).
// Only a connection error is "cannot reach": a server that answered but
// lists no model needs --model.
func (s *Sweep) resolveModel(ctx context.Context, c *client, cfg *Config, res *Result) ([]string, error) {
	ids, err := c.models(ctx)
	switch {
	case err != nil && isConnectError(err):
		return nil, fmt.Errorf("cannot reach the server: %w", err)
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("cannot reach the server: %s/v1/models did not answer within 30s", shownURL(cfg.URL))
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil && isAuthError(err):
		return nil, err
	case err != nil && cfg.Model == "":
		return nil, fmt.Errorf("the server does not list models: give --model (%v)", err)
	case err != nil:
		res.Notes = append(res.Notes, "the server does not list models ("+oneLine(err.Error())+"); using --model as given")
		return nil, nil
	case len(ids) == 0 && cfg.Model == "":
		return nil, fmt.Errorf("the server does not list models: give --model (%s/v1/models has no ids)", shownURL(cfg.URL))
	case len(ids) == 0:
		res.Notes = append(res.Notes, "the server does not list models (/v1/models has no ids); using --model as given")
		return nil, nil
	case cfg.Model == "":
		cfg.Model = ids[0]
		c.cfg.Model = ids[0]
	}
	return ids, nil
}

// listed is a model list for a message, at most a few names.
func listed(ids []string) string {
	if len(ids) > 5 {
		return strings.Join(ids[:5], ", ") + fmt.Sprintf(" and %d more", len(ids)-5)
	}
	return strings.Join(ids, ", ")
}

// preflight sends one request with the sweep's settings before the first
// level, as vllm bench serve does, and settles continuous_usage_stats once:
// when the server's error says it refuses it, the sweep goes on without it
// (said by warn). Any other failure stops the sweep with the server's status
// and text. It returns the outcome for the result document.
func preflight(ctx context.Context, c *client, pg *promptGen, ids []string, warn func(string)) (string, error) {
	rec := probe(ctx, c, pg)
	outcome := "ok"
	if rec.Status >= 400 && rec.Status < 500 && refusesContinuous(rec.errBody) {
		c.continuous.Store(false)
		warn(fmt.Sprintf("the server refused continuous_usage_stats (HTTP %d: %s): the sweep runs without it, so tokens per chunk are estimated from the final usage",
			rec.Status, oneLine(rec.Body)))
		c.logf("sending without continuous_usage_stats")
		rec = probe(ctx, c, pg)
		outcome = "ok without continuous_usage_stats"
	}
	if rec.Completed() {
		return outcome, nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	what := rec.Failure
	if rec.Status != 0 {
		what = fmt.Sprintf("HTTP %d", rec.Status)
	}
	detail := rec.Error
	if rec.Body != "" {
		detail = oneLine(rec.Body)
	}
	msg := fmt.Sprintf("the pre-flight request (one request with the sweep's settings) failed: %s", what)
	if detail != "" {
		msg += ": " + detail
	}
	if rec.Failure == FailConnect {
		msg = "cannot reach the server: " + msg
	}
	if ids != nil && !contains(ids, c.cfg.Model) {
		msg += fmt.Sprintf(" (--model %q; the server lists: %s)", c.cfg.Model, listed(ids))
	}
	return "", errors.New(msg + "; --no-preflight (campaign: macro.no_preflight) skips this check")
}

// probe sends one unmeasured request.
func probe(ctx context.Context, c *client, pg *promptGen) *Record {
	rec := &Record{}
	c.send(ctx, rec, pg.make(c.cfg.InputLen), nil)
	return rec
}

// refusesContinuous reports whether an error body says the server does not
// take stream_options.continuous_usage_stats.
func refusesContinuous(body string) bool {
	b := strings.ToLower(body)
	return strings.Contains(b, "continuous_usage_stats") || strings.Contains(b, "continuous usage")
}
