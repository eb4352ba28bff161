package daemon

import (
	"encoding/json"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/health"
)

// record is what the daemon remembers of one app between passes and across
// restarts (persisted as JSON in the db's instances table). Everything
// else about an app is observed again at each pass.
type record struct {
	AppID        string `json:"appId"`
	DeploymentID string `json:"deploymentId"`
	VolumeID     string `json:"volumeId,omitempty"`
	// Booted: this deployment was booted at least once.
	Booted bool `json:"booted,omitempty"`
	// Sleeping: the guest was put to sleep and a snapshot waits.
	Sleeping bool `json:"sleeping,omitempty"`
	// MemoryMiB the guest was started with (admission counts it while up).
	MemoryMiB uint64         `json:"memoryMib,omitempty"`
	Health    health.Record  `json:"health"`
	Budget    backoff.Budget `json:"budget"`
	// FailedAt is when the current failure was first seen (zero: none).
	FailedAt     time.Time `json:"failedAt,omitempty"`
	FailReason   string    `json:"failReason,omitempty"`
	LastExitCode *int      `json:"lastExitCode,omitempty"`
	StartedAt    time.Time `json:"startedAt,omitempty"`
	ConvergedAt  time.Time `json:"convergedAt,omitempty"`
	LayerDigests []string  `json:"layerDigests,omitempty"`
	// Message is the latest sentence about this app from applying (a
	// start held back, a layer that failed); cleared when it no longer
	// applies.
	Message string `json:"message,omitempty"`
}

func (r *record) encode() []byte {
	b, _ := json.Marshal(r) // a record holds nothing json cannot encode
	return b
}

func decodeRecord(b []byte) (*record, error) {
	r := &record{}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, err
	}
	return r, nil
}
