package fsm

import "github.com/ctlplane/ctlplane/state"

// command applies one message type to the state store.
type command struct {
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
	commands[t] = command{name: name, apply: func(s *state.Store, idx uint64, buf []byte) (any, error) {
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
	commands[t] = command{name: name, batch: batch, apply: func(s *state.Store, idx uint64, buf []byte) (any, error) {
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

// result turns a state-store (object, error) pair into one response value.
func result[T any](obj *T, err error) any {
	if err != nil {
		return err
	}
	return obj
}

func init() {
	registerBatch(BindingRuleSetType, "binding rule set", func(b *state.Batch, idx uint64, req *BindingRuleSetRequest) any {
		return result(b.BindingRuleSet(idx, &req.Rule, req.Create))
	})
	registerBatch(BindingRuleDeleteType, "binding rule delete", func(b *state.Batch, idx uint64, req *BindingRuleDeleteRequest) any {
		if err := b.BindingRuleDelete(idx, req.ID, req.Namespace); err != nil {
			return err
		}
		return nil
	})
	register(ServerRegisterType, "server register", func(s *state.Store, idx uint64, req *ServerRegisterRequest) any {
		return s.ServerSet(idx, &req.Server)
	})
	register(ServerDeregisterType, "server deregister", func(s *state.Store, idx uint64, req *ServerDeregisterRequest) any {
		return s.ServerDelete(idx, req.ID)
	})
	register(ACLPolicySetType, "policy set", func(s *state.Store, idx uint64, req *ACLPolicySetRequest) any {
		return result(s.ACLPolicySet(idx, &req.Policy))
	})
	register(ACLPolicyDeleteType, "policy delete", func(s *state.Store, idx uint64, req *ACLPolicyDeleteRequest) any {
		return s.ACLPolicyDelete(idx, req.ID)
	})
	register(ACLTokenSetType, "token set", func(s *state.Store, idx uint64, req *ACLTokenSetRequest) any {
		return result(s.ACLTokenSet(idx, &req.Token, req.Create))
	})
	register(ACLTokenDeleteType, "token delete", func(s *state.Store, idx uint64, req *ACLTokenDeleteRequest) any {
		return s.ACLTokenDelete(idx, req.AccessorID)
	})
	register(ACLTokenReapType, "token reap", func(s *state.Store, idx uint64, req *ACLTokenReapRequest) any {
		n, err := s.ACLTokensDeleteExpired(idx, req.Now, req.AccessorIDs)
		if err != nil {
			return err
		}
		return n
	})
	register(ACLRoleSetType, "role set", func(s *state.Store, idx uint64, req *ACLRoleSetRequest) any {
		return result(s.ACLRoleSet(idx, &req.Role))
	})
	register(ACLRoleDeleteType, "role delete", func(s *state.Store, idx uint64, req *ACLRoleDeleteRequest) any {
		return s.ACLRoleDelete(idx, req.ID)
	})
	register(ACLAuthMethodSetType, "auth method set", func(s *state.Store, idx uint64, req *ACLAuthMethodSetRequest) any {
		return result(s.ACLAuthMethodSet(idx, &req.Method, req.Create))
	})
	register(ACLAuthMethodDeleteType, "auth method delete", func(s *state.Store, idx uint64, req *ACLAuthMethodDeleteRequest) any {
		return s.ACLAuthMethodDelete(idx, req.Name)
	})
	register(ACLBootstrapType, "ACL bootstrap", func(s *state.Store, idx uint64, req *ACLTokenSetRequest) any {
		return result(s.ACLBootstrap(idx, &req.Token))
	})
	register(ACLInitType, "ACL init", func(s *state.Store, idx uint64, req *ACLInitRequest) any {
		return s.ACLInit(idx, &req.ManagementPolicy, &req.Anonymous, req.Initial)
	})
}
