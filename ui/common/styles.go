package common

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Theme is the palette, as ANSI colour indices so the operator's terminal
// palette decides the actual colours.
type Theme struct {
	Accent, Muted, Good, Warn, Bad, Text, Sim color.Color
}

// DefaultTheme works on dark and light terminals.
func DefaultTheme() Theme {
	return Theme{
		Accent: lipgloss.ANSIColor(6), // cyan
		Muted:  lipgloss.ANSIColor(8), // bright black
		Good:   lipgloss.ANSIColor(2), // green
		Warn:   lipgloss.ANSIColor(3), // yellow
		Bad:    lipgloss.ANSIColor(1), // red
		Text:   lipgloss.ANSIColor(7), // white
		Sim:    lipgloss.ANSIColor(5), // magenta
	}
}

// Styles is every style the cockpit draws with, built once from a theme.
// No pane calls lipgloss.NewStyle inside View.
type Styles struct {
	Header, HeaderSim, Footer, FooterError lipgloss.Style
	TabActive, TabInactive                 lipgloss.Style
	Title, Subtle, Bold, Good, Warn, Bad   lipgloss.Style
	Banner, BannerWarn, Box, TableHeader   lipgloss.Style
	BarFull, BarEmpty, Chart, ChartAlt     lipgloss.Style
	Selected, Input                        lipgloss.Style
}

// NewStyles builds the styles from a theme.
func NewStyles(t Theme) *Styles {
	s := lipgloss.NewStyle
	return &Styles{
		Header:      s().Bold(true).Foreground(t.Accent),
		HeaderSim:   s().Bold(true).Foreground(t.Sim),
		Footer:      s().Foreground(t.Muted),
		FooterError: s().Foreground(t.Bad).Bold(true),
		TabActive:   s().Bold(true).Foreground(t.Accent).Underline(true),
		TabInactive: s().Foreground(t.Muted),
		Title:       s().Bold(true).Foreground(t.Accent),
		Subtle:      s().Foreground(t.Muted),
		Bold:        s().Bold(true),
		Good:        s().Foreground(t.Good),
		Warn:        s().Foreground(t.Warn),
		Bad:         s().Foreground(t.Bad).Bold(true),
		Banner:      s().Bold(true).Foreground(lipgloss.ANSIColor(15)).Background(t.Bad).Padding(0, 1),
		BannerWarn:  s().Bold(true).Foreground(lipgloss.ANSIColor(0)).Background(t.Warn).Padding(0, 1),
		Box:         s().Border(lipgloss.RoundedBorder()).BorderForeground(t.Muted),
		TableHeader: s().Bold(true).Foreground(t.Accent),
		BarFull:     s().Foreground(t.Good),
		BarEmpty:    s().Foreground(t.Muted),
		Chart:       s().Foreground(t.Accent),
		ChartAlt:    s().Foreground(t.Warn),
		Selected:    s().Reverse(true),
		Input:       s().Foreground(t.Text),
	}
}
