package fsm

import "github.com/ctlplane/ctlplane/state"

// command applies one message type to the state store.
type command struct {
	typ   MessageType
	name  string
	apply func(s *state.Store, idx uint64, buf []byte) (any, error)
	// batch, when set, applies the entry inside a batch of entries (one
	// memdb transaction); otherwise a batch is cut before the entry.
	batch func(b *state.Batch, idx uint64, buf []byte) (any, error)
}

var commands = map[MessageType]command{}

// register binds a message type to the state-store write it stands for. The
// apply function returns what the writer sees: an object or an error.
func register[T any](t MessageType, name string, apply func(s *state.Store, idx uint64, req *T) any) {
	commands[t] = command{typ: t, name: name, apply: func(s *state.Store, idx uint64, buf []byte) (any, error) {
		req := new(T)
		if err := decode(buf, req); err != nil {
			return nil, err
		}
		return apply(s, idx, req), nil
	}}
}

// registerBatch is register for a write that also runs inside a batch;
// alone, it is a batch of one.
func registerBatch[T any](t MessageType, name string, apply func(b *state.Batch, idx uint64, req *T) any) {
	batch := func(b *state.Batch, idx uint64, buf []byte) (any, error) {
		req := new(T)
		if err := decode(buf, req); err != nil {
			return nil, err
		}
		return apply(b, idx, req), nil
	}
	commands[t] = command{typ: t, name: name, batch: batch, apply: func(s *state.Store, idx uint64, buf []byte) (any, error) {
		b := s.NewBatch()
		defer b.Abort()
		resp, err := batch(b, idx, buf)
		if err != nil {
			return nil, err
		}
		if _, failed := resp.(error); !failed {
			if err := b.Commit(); err != nil {
				return err, nil
			}
		}
		return resp, nil
	}}
}

// The commands of the binding-rule, server and ACL families.
var (
	BindingRuleSet = defineBatch(BindingRuleSetType, "binding rule set", func(b *state.Batch, idx uint64, req *BindingRuleSetRequest) (*state.BindingRule, error) {
		return b.BindingRuleSet(idx, &req.Rule, req.Create)
	})
	BindingRuleDelete = defineBatch(BindingRuleDeleteType, "binding rule delete", func(b *state.Batch, idx uint64, req *BindingRuleDeleteRequest) (Done, error) {
		return Done{}, b.BindingRuleDelete(idx, req.ID, req.Namespace)
	})
	ServerRegister = define(ServerRegisterType, "server register", func(s *state.Store, idx uint64, req *ServerRegisterRequest) (Done, error) {
		return Done{}, s.ServerSet(idx, &req.Server)
	})
	ServerDeregister = define(ServerDeregisterType, "server deregister", func(s *state.Store, idx uint64, req *ServerDeregisterRequest) (Done, error) {
		return Done{}, s.ServerDelete(idx, req.ID)
	})
	ACLPolicySet = define(ACLPolicySetType, "policy set", func(s *state.Store, idx uint64, req *ACLPolicySetRequest) (*state.ACLPolicy, error) {
		return s.ACLPolicySet(idx, &req.Policy)
	})
	ACLPolicyDelete = define(ACLPolicyDeleteType, "policy delete", func(s *state.Store, idx uint64, req *ACLPolicyDeleteRequest) (Done, error) {
		return Done{}, s.ACLPolicyDelete(idx, req.ID)
	})
	ACLTokenSet = define(ACLTokenSetType, "token set", func(s *state.Store, idx uint64, req *ACLTokenSetRequest) (*state.ACLToken, error) {
		return s.ACLTokenSet(idx, &req.Token, req.Create)
	})
	ACLTokenDelete = define(ACLTokenDeleteType, "token delete", func(s *state.Store, idx uint64, req *ACLTokenDeleteRequest) (Done, error) {
		return Done{}, s.ACLTokenDelete(idx, req.AccessorID)
	})
	ACLTokenReap = define(ACLTokenReapType, "token reap", func(s *state.Store, idx uint64, req *ACLTokenReapRequest) (int, error) {
		return s.ACLTokensDeleteExpired(idx, req.Now, req.AccessorIDs)
	})
	ACLRoleSet = define(ACLRoleSetType, "role set", func(s *state.Store, idx uint64, req *ACLRoleSetRequest) (*state.ACLRole, error) {
		return s.ACLRoleSet(idx, &req.Role)
	})
	ACLRoleDelete = define(ACLRoleDeleteType, "role delete", func(s *state.Store, idx uint64, req *ACLRoleDeleteRequest) (Done, error) {
		return Done{}, s.ACLRoleDelete(idx, req.ID)
	})
	ACLAuthMethodSet = define(ACLAuthMethodSetType, "auth method set", func(s *state.Store, idx uint64, req *ACLAuthMethodSetRequest) (*state.ACLAuthMethod, error) {
		return s.ACLAuthMethodSet(idx, &req.Method, req.Create)
	})
	ACLAuthMethodDelete = define(ACLAuthMethodDeleteType, "auth method delete", func(s *state.Store, idx uint64, req *ACLAuthMethodDeleteRequest) (Done, error) {
		return Done{}, s.ACLAuthMethodDelete(idx, req.Name)
	})
	ACLBootstrap = define(ACLBootstrapType, "ACL bootstrap", func(s *state.Store, idx uint64, req *ACLTokenSetRequest) (*state.ACLToken, error) {
		return s.ACLBootstrap(idx, &req.Token)
	})
	ACLInit = define(ACLInitType, "ACL init", func(s *state.Store, idx uint64, req *ACLInitRequest) (Done, error) {
		return Done{}, s.ACLInit(idx, &req.ManagementPolicy, &req.Anonymous, req.Initial)
	})
)
