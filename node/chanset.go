package node

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// nodeChannel is one channel of a running node: a peer's (peerChannel)
// or an orderer's (ordererChannel).
type nodeChannel interface {
	comparable
	id() string
	// collectors are the channel's metrics, each series labelled with
	// the channel when labelled.
	collectors(labelled bool) []prometheus.Collector
}

// channelSet is the channels a node serves, in the order they were
// opened: the node file's, then those joined. Joins and leaves change it
// while calls read it. It is also the node's metrics collector of them
// all: a node with one channel exports its series unlabelled (as before
// channels, which dashboards, the bench and strand net read by their
// exact text), one with several labels each with its channel, and the
// set decides at each scrape, so a join or leave that changes the count
// relabels at once.
type channelSet[C nodeChannel] struct {
	mu  sync.RWMutex
	all []C
}

// list is a copy of the channels.
func (s *channelSet[C]) list() []C {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.all)
}

func (s *channelSet[C]) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.all)
}

func (s *channelSet[C]) add(c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, c)
}

func (s *channelSet[C]) remove(c C) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = slices.DeleteFunc(s.all, func(x C) bool { return x == c })
}

// find returns channel id, if the set holds it.
func (s *channelSet[C]) find(id string) (C, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, c := range s.all {
		if c.id() == id {
			return c, true
		}
	}
	var zero C
	return zero, false
}

// ids are the channels' ids, in the set's order.
func (s *channelSet[C]) ids() []string {
	all := s.list()
	ids := make([]string, len(all))
	for i, c := range all {
		ids[i] = c.id()
	}
	return ids
}

// Describe sends no descriptors: the collector is unchecked, since its
// series follow the channels.
func (s *channelSet[C]) Describe(chan<- *prometheus.Desc) {}

func (s *channelSet[C]) Collect(ch chan<- prometheus.Metric) {
	all := s.list()
	for _, c := range all {
		for _, col := range c.collectors(len(all) > 1) {
			col.Collect(ch)
		}
	}
}
