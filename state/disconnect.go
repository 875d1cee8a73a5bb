package state

import "time"

// AllocStateFieldClientStatus is the field an AllocState records (Nomad's).
const AllocStateFieldClientStatus = "ClientStatus"

// AllocState is one change the servers made to an allocation's field.
type AllocState struct {
	Field string `codec:",omitempty"`
	Value string `codec:",omitempty"`
	Time  time.Time
}

// AppendState records a change of field to value at t.
func (a *Allocation) AppendState(field, value string, t time.Time) {
	a.AllocStates = append(a.AllocStates, &AllocState{Field: field, Value: value, Time: t.UTC()})
}

// NeedsToReconnect says whether the servers' last word on the allocation's
// client status was unknown: its node was disconnected and it has not been
// reconciled since (Nomad's Allocation.NeedsToReconnect).
func (a *Allocation) NeedsToReconnect() bool {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		if s := a.AllocStates[i]; s.Field == AllocStateFieldClientStatus {
			return s.Value == AllocClientStatusUnknown
		}
	}
	return false
}

// LastUnknown is when the allocation last became unknown (zero if never;
// Nomad's Allocation.LastUnknown).
func (a *Allocation) LastUnknown() time.Time {
	var last time.Time
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		s := a.AllocStates[i]
		if s.Field != AllocStateFieldClientStatus {
			continue
		}
		if s.Value == AllocClientStatusUnknown {
			last = s.Time
		} else if !last.IsZero() {
			break
		}
	}
	return last
}

// Expired says whether an unknown allocation has been so for at least
// maxDisconnect (Nomad's Allocation.Expired; nil: it never expires).
func (a *Allocation) Expired(maxDisconnect *time.Duration, now time.Time) bool {
	if a.ClientStatus != AllocClientStatusUnknown || maxDisconnect == nil {
		return false
	}
	last := a.LastUnknown()
	return !last.IsZero() && !now.Before(last.Add(*maxDisconnect))
}
