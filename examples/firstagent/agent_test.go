// docs:begin first-agent-kit

package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podsweeper/podsweeper/deletion"
	"github.com/podsweeper/podsweeper/deletion/deletiontest"
)

// TestADeletedPodsRulesGoAndALivePodsStay runs the agent on the test kit's
// cluster under testing/synctest, whose fake clock lets an hour of checks
// pass in milliseconds: the rules of a deleted pod go at once on
// PodDeleted, those of a pod whose delete event was missed within a
// SweepInterval, and those of a live pod stay.
func TestADeletedPodsRulesGoAndALivePodsStay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cluster := deletiontest.NewCluster()
		firewall := NewFirewall()
		agent, err := NewAgent(cluster, firewall, "node-a", deletion.Options{Logger: deletiontest.Discard()})
		require.NoError(t, err)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- agent.Run(ctx) }()
		defer func() { stop(); require.NoError(t, <-done) }()

		web, db, cache := startPod(t, cluster, agent, "web-0"), startPod(t, cluster, agent, "db-0"), startPod(t, cluster, agent, "cache-0")

		cluster.DeletePod(web.Pod)
		agent.PodDeleted(web.Pod)
		deletiontest.Advance(time.Second)
		assert.Nil(t, firewall.Rules(web.PUID), "web-0's rules go at once")

		cluster.DeletePod(db.Pod) // its delete event is missed
		deletiontest.Advance(deletion.DefaultSweepInterval)
		assert.Nil(t, firewall.Rules(db.PUID), "db-0's rules go within a SweepInterval")

		deletiontest.Advance(time.Hour)
		assert.NotNil(t, firewall.Rules(cache.PUID), "cache-0 lives: its rules stay")
	})
}

// docs:end first-agent-kit
