package acl

// SetNewID replaces how s makes new object IDs (tests make them collide).
func SetNewID(s *Service, newID func() string) { s.newID = newID }

// NewIDAttempts is how many candidate IDs a create tries.
const NewIDAttempts = newIDAttempts
