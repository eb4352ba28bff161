package nns

import "testing"

// The numbers below were read from the NnsFunction and Topic enums of
// rs/nns/governance/proto/ic_nns_governance/pb/v1/governance.proto and the
// topic mapping in governance's source. A wrong number is accepted by
// governance and runs the wrong registry method, so each is pinned here.
func TestEveryNnsFunctionAlpProposesHasItsGovernanceNumberMethodAndTopic(t *testing.T) {
	cases := []struct {
		fn     NnsFunction
		number int32
		method string
		topic  Topic
		topicN int32
	}{
		{FunctionChangeSubnetMembership, 31, "change_subnet_membership", TopicSubnetManagement, 7},
		{FunctionDeployGuestosToAllSubnetNodes, 11, "deploy_guestos_to_all_subnet_nodes", TopicIcOsVersionDeployment, 12},
		{FunctionUpdateConfigOfSubnet, 7, "update_subnet", TopicSubnetManagement, 7},
		{FunctionRemoveNodes, 18, "remove_nodes", TopicNodeAdmin, 5},
		{FunctionRemoveNodeOperators, 23, "remove_node_operators", TopicNodeAdmin, 5},
		{FunctionReviseElectedGuestosVersions, 38, "revise_elected_guestos_versions", TopicIcOsVersionElection, 13},
		{FunctionAssignNoid, 8, "add_node_operator", TopicNodeAdmin, 5},
		{FunctionUpdateNodeOperatorConfig, 16, "update_node_operator_config", TopicNodeAdmin, 5},
		{FunctionDeployHostosToSomeNodes, 51, "deploy_hostos_to_some_nodes", TopicIcOsVersionDeployment, 12},
	}
	for _, c := range cases {
		if int32(c.fn) != c.number {
			t.Errorf("%s = %d, governance.proto says %d", c.fn, int32(c.fn), c.number)
		}
		if m, ok := c.fn.RegistryMethod(); !ok || m != c.method {
			t.Errorf("%s runs %q, want %q", c.fn, m, c.method)
		}
		if c.fn.Topic() != c.topic || int32(c.fn.Topic()) != c.topicN {
			t.Errorf("%s topic = %s (%d), want %s (%d)", c.fn, c.fn.Topic(), int32(c.fn.Topic()), c.topic, c.topicN)
		}
	}
	if TopicParticipantManagement != 6 {
		t.Errorf("ParticipantManagement (AddOrRemoveNodeProvider's topic) = %d, want 6", TopicParticipantManagement)
	}
}

func TestProposalStatusNumbersMatchGovernance(t *testing.T) {
	want := map[ProposalStatus]int32{StatusOpen: 1, StatusRejected: 2, StatusAdopted: 3, StatusExecuted: 4, StatusFailed: 5}
	for s, n := range want {
		if int32(s) != n {
			t.Errorf("%s = %d, want %d", s, int32(s), n)
		}
	}
	for _, s := range []ProposalStatus{StatusRejected, StatusExecuted, StatusFailed} {
		if !s.Terminal() {
			t.Errorf("%s should be terminal", s)
		}
	}
	if StatusOpen.Terminal() || StatusAdopted.Terminal() {
		t.Error("open and adopted are not terminal")
	}
}

func TestTopicNamesRoundTripForTheDashboardFilter(t *testing.T) {
	got, ok := ParseTopic("TOPIC_IC_OS_VERSION_ELECTION")
	if !ok || got != TopicIcOsVersionElection {
		t.Fatalf("ParseTopic = %v %v", got, ok)
	}
	if _, ok := ParseTopic("TOPIC_NOPE"); ok {
		t.Fatal("unknown topic parsed")
	}
}

func TestGovernanceErrorTypeNumbersMatchGovernance(t *testing.T) {
	// governance_error::ErrorType (docs/decisions.md).
	for want, got := range map[int32]int32{
		9: ErrorTypeHotKey, 10: ErrorTypeResourceExhausted, 11: ErrorTypePreconditionFailed, 12: ErrorTypeExternal,
		13: ErrorTypeLedgerUpdateOngoing, 14: ErrorTypeInsufficientFunds, 15: ErrorTypeInvalidPrincipal, 16: ErrorTypeInvalidProposal,
		17: ErrorTypeAlreadyJoinedCommunityFund, 18: ErrorTypeNotInTheCommunityFund, 19: ErrorTypeNeuronAlreadyVoted,
	} {
		if got != want {
			t.Errorf("error type %d is pinned as %d", want, got)
		}
	}
	if s := (&GovernanceError{ErrorType: 16, ErrorMessage: "bad title"}).Error(); s != "governance error InvalidProposal: bad title" {
		t.Errorf("error text %q", s)
	}
	for code, name := range map[int32]string{17: "AlreadyJoinedCommunityFund", 18: "NotInTheCommunityFund", 19: "NeuronAlreadyVoted", 20: "ErrorType(20)"} {
		if s := (&GovernanceError{ErrorType: code}).Error(); s != "governance error "+name+": " {
			t.Errorf("error type %d reads %q", code, s)
		}
	}
}
