package http

// JobService is what the jobs endpoints call (see server/jobs).
type JobService interface{}
