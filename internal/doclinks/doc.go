// Package doclinks holds the test that every relative link and anchor in the project's
// Markdown files resolves: the README is a short page over docs/, and a page moved or a
// heading renamed must not leave a dead link behind.
package doclinks
