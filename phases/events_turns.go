package phases

// SessionLevel is one multi-turn level: its users, each running sessions
// turn by turn (the history sent with the server's real answers), the
// sessions' durations and the figures of each turn index.
type SessionLevel struct {
	Users      int     `json:"users"`
	ThinkTimeS float64 `json:"think_time_s"` // each user's wait between an answer and the next turn (a turn may carry its own)
	Header     string  `json:"session_header,omitempty"`
	// Started counts the sessions begun; Completed those whose every turn
	// succeeded; Failed those a failed turn ended; ContextEnded those
	// ended before a turn whose history would not fit the model's context;
	// the rest were cut by the level's end.
	Started      int `json:"sessions_started"`
	Completed    int `json:"sessions_completed"`
	Failed       int `json:"sessions_failed"`
	ContextEnded int `json:"sessions_context_ended,omitempty"`
	// Durations of the completed sessions, first send to last answer,
	// think times included (seconds).
	MeanDurationS float64 `json:"mean_session_s"`
	P50DurationS  float64 `json:"p50_session_s"`
	P90DurationS  float64 `json:"p90_session_s"`
	MaxDurationS  float64 `json:"max_session_s"`
	MeanTurns     float64 `json:"mean_turns"` // turns per completed session
	// Turns are the figures per turn index (1 the first), the last
	// holding every turn from MaxTurnIndex on.
	Turns []TurnLevel `json:"turns"`
}

// MaxTurnIndex is the last turn index a level keeps apart; later turns
// are counted with it.
const MaxTurnIndex = 64

// TurnLevel is one turn index's figures over a level's measured turns.
type TurnLevel struct {
	Turn            int     `json:"turn"`
	Completed       int     `json:"completed"`
	Failed          int     `json:"failed"`
	MeanInputTokens float64 `json:"mean_input_tokens"`
	MedianTTFTms    float64 `json:"median_ttft_ms"`
	P90TTFTms       float64 `json:"p90_ttft_ms"`
	MedianTPOTms    float64 `json:"median_tpot_ms"`
	P90TPOTms       float64 `json:"p90_tpot_ms"`
	// PrefixHitRate is the share of the turns' prompt tokens the server's
	// prefix cache held, from their usage's cached_tokens (nil: the
	// server did not say; vLLM says with --enable-prompt-tokens-details).
	PrefixHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
}
