package reported

import (
	"reflect"

	"alpnib.dev/nibrunner/desired"
)

// SchemaFile is the schema's file name under docs/.
const SchemaFile = "reported-state.schema.json"

// SchemaID is the $id of reported-state.schema.json.
const SchemaID = "https://raw.githubusercontent.com/ilbertt/nibrunner/main/crates/protocol/schema/reported-state.schema.json"

// Schema returns reported-state.schema.json, generated from these types
// by the same generator as desired-state.schema.json.
func Schema() ([]byte, error) {
	return desired.SchemaGen{
		ID:   SchemaID,
		Root: reflect.TypeFor[HostReportedState](),
		Enums: map[reflect.Type][]string{
			reflect.TypeFor[HostState]():       words(HostRegistering, HostReady, HostDraining, HostUnreachable),
			reflect.TypeFor[VolumeState]():     words(VolumePending, VolumeReady, VolumeDetached, VolumeDeleted, VolumeFailed),
			reflect.TypeFor[InstanceState]():   words(InstancePending, InstanceStarting, InstanceRunning, InstanceUnhealthy, InstanceStopping, InstanceStopped, InstanceIdle, InstanceFailed),
			reflect.TypeFor[CheckpointState](): words(CheckpointPending, CheckpointReady, CheckpointFailed),
			reflect.TypeFor[ExportState]():     words(ExportPending, ExportPreparing, ExportReady, ExportFailed),
		},
		Docs: map[reflect.Type]string{
			reflect.TypeFor[HostReportedState](): "What one host says about itself, written atomically after every reconcile pass. Optional fields are omitted, not empty; messages are at most 512 characters.",
			reflect.TypeFor[Instance]():          "One app's microVM as the host last saw it. message is a sentence a person can act on.",
			reflect.TypeFor[Meters]():            "Counters that only ever grow.",
		},
	}.JSON()
}

func words[T ~string](ws ...T) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = string(w)
	}
	return out
}
