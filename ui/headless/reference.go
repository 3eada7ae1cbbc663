package headless

// docs/reference.md, the reference of the campaign keys and of each
// command's flags, is written from the campaign's types, the commands'
// flag sets and their binds (sweepBinds, …); a test fails when the page
// and the code differ.
//go:generate env PROFDECK_WRITE_REFERENCE=1 go test -count=1 -run ^TestReferencePageIsCurrent$ .
