package campaign

import (
	"context"
	"time"

	"github.com/profdeck/profdeck/phases"
	"github.com/profdeck/profdeck/remote"
	"github.com/profdeck/profdeck/report"
)

// Opened is a campaign's session, as both front-ends (the cockpit and
// `profdeck run`) open it: its journal, the session on it, the notebook's
// autosave, and how many events the journal held before.
type Opened struct {
	Journal *report.Journal
	Session *report.Session
	Saver   *report.Autosave
	Prior   int
	APIKey  string // the server's API key, redacted from the session
}

// OpenOptions shape Open.
type OpenOptions struct {
	Version string // profdeck's, journalled with the session
	// Now stamps the notebook (time.Now when nil).
	Now func() time.Time
	// Background gathers the nodes' system information without waiting
	// (the cockpit shows at once; a run waits so that it is journalled
	// before the first step).
	Background bool
}

// Open opens the campaign's journal and a session on it that runs until
// ctx ends, redacts the API key, journals the session's start and every
// node's system information (nodes: the head first), and starts the
// notebook's autosave. Close ends what Open started but the session.
func Open(ctx context.Context, c *Campaign, nodes []remote.Host, o OpenOptions) (*Opened, error) {
	journal, err := report.OpenJournal(c.JournalPath())
	if err != nil {
		return nil, err
	}
	sess := report.NewSession(ctx, journal)
	op := &Opened{Journal: journal, Session: sess, Prior: len(sess.Events()), APIKey: c.APIKey()}
	sess.Redact(op.APIKey)
	now := o.Now
	if now == nil {
		now = time.Now
	}
	head := nodes[0]
	if err := sess.Record(phases.New(now(), phases.KindSessionStarted, phases.SessionStarted{
		Campaign: c.Name, Host: head.Name(), Simulated: remote.IsSimulated(head), Notebook: c.Notebook, Version: o.Version,
	})); err != nil {
		journal.Close()
		return nil, err
	}
	for i, n := range nodes {
		launch := c.Server.Launch
		if i > 0 {
			launch = c.Server.WorkerLaunch
		}
		if o.Background {
			go recordSystem(ctx, sess, n, launch)
		} else {
			recordSystem(ctx, sess, n, launch)
		}
	}
	opts := report.NotebookOptions{Campaign: c.Name, Journal: c.JournalPath(), Now: o.Now, // the autosave adds the session's secrets
		Capacity: c.Capacity.Ask(), GPUHour: c.Cost.GPUHour}
	op.Saver = report.NewAutosave(sess, c.Notebook, opts, 3*time.Second)
	return op, nil
}

// WriteNotebook writes the notebook now, with every event sent so far.
func (op *Opened) WriteNotebook(context.Context) (string, error) {
	op.Session.Sync()
	path, _, err := op.Saver.WriteNow()
	return path, err
}

// Close stops the autosave (writing the notebook a last time) and closes
// the journal; the session must have ended (its context done, Done closed)
// for the journal to hold every event.
func (op *Opened) Close() {
	op.Saver.Close()
	op.Journal.Close()
}

// recordSystem journals a host's system metadata once per session.
func recordSystem(ctx context.Context, sess *report.Session, host remote.Host, launch string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	info, err := report.GatherSystemInfo(ctx, host, launch)
	if err != nil {
		_ = sess.Record(phases.New(time.Now(), phases.KindSessionError, phases.ErrorEvent{Where: "system info", Err: err.Error()}))
		return
	}
	_ = sess.Record(phases.New(time.Now(), phases.KindSessionSystem, info))
}
