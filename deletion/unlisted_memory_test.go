package deletion

// The memory of removals a list of the Inventory is not to bring back (unlistedMemory), alone.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheUnlistedMemoryKeepsAsManyRemovalsAsTheMostPUsEverTrackedAtOnce(t *testing.T) {
	var m unlistedMemory
	m.saw(50) // 50 tracked at once, then removed one at a time with few tracked
	for i := range 50 {
		m.add(fmt.Sprint(i), 1)
	}
	got := m.copy(0)
	for i := range 50 {
		assert.Contains(t, got, fmt.Sprint(i), "a removal among the latest 50 is remembered")
	}
}

func TestTheUnlistedMemoryIsBoundedByTwiceItsLimit(t *testing.T) {
	var m unlistedMemory
	for i := range 1000 {
		m.add(fmt.Sprint(i), 1)
		assert.LessOrEqual(t, len(m.copy(0)), 2*minUnlistedMemory)
	}
	got := m.copy(0)
	for i := 1000 - minUnlistedMemory; i < 1000; i++ {
		assert.Contains(t, got, fmt.Sprint(i), "the latest minUnlistedMemory removals are remembered")
	}
}

func TestTheUnlistedMemoryKeepsTheLatestRemovalsWhenItsLimitGrows(t *testing.T) {
	var m unlistedMemory
	for i := range 33 {
		m.add(fmt.Sprint(i), 1) // the limit is 16
	}
	m.add("33", 20) // 20 tracked at once now
	got := m.copy(0)
	for i := 34 - 20; i < 34; i++ {
		assert.Contains(t, got, fmt.Sprint(i), "one of the latest 20 removals, 20 tracked at once, is remembered")
	}
	assert.LessOrEqual(t, len(got), 2*20)
}

func TestUntracksOfPUIDsNeverHeldPushOutNoRemoval(t *testing.T) {
	var m unlistedMemory
	for i := range 17 {
		m.add(fmt.Sprint("dropped-", i), 17) // a dry run drops 17 of 17 tracked at once
	}
	for i := range 100 {
		m.addUntracked(fmt.Sprint("never-held-", i), 1)
		assert.LessOrEqual(t, len(m.copy(0)), 4*17, "bounded")
	}
	got := m.copy(0)
	for i := range 17 {
		assert.Contains(t, got, fmt.Sprint("dropped-", i), "a drop is remembered whatever Untrack was given")
	}
	assert.Contains(t, got, "never-held-99", "the latest Untracks are remembered too")
}

func TestAListWindowHoldsTheRemovalsOfItsDeadlineAndThoseBeingTold(t *testing.T) {
	w := listWindow{removing: map[string]int{}, gone: map[string]struct{}{}, end: 100}
	w.removed("a", 50)  // within the list's deadline
	w.removed("b", 150) // past it: a hung list keeps no record for long
	assert.Contains(t, w.gone, "a")
	assert.NotContains(t, w.gone, "b")
	assert.Equal(t, 1, w.removing["b"], "b's removal is being told")
	w.told("b")
	assert.NotContains(t, w.removing, "b", "told: a list that begins now may bring b back")
}
