// Package layers holds no code: its test checks that the packages import each other
// only as the README's package diagram says (Development), so the diagram stays true.
package layers
