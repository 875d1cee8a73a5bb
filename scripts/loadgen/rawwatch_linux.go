package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// rawReader reads the answers of all its connections in one goroutine,
// from an epoll set of its own. Each connection's socket is held by a
// duplicate descriptor and the net.Conn is closed, so that Go's netpoller
// no longer sees it: an answer costs the generator one epoll event and one
// read, not a netpoller wake-up, a goroutine switch and a read.
type rawReader struct {
	epfd    int
	stop    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex
	pending map[int32]*rawPending
	fds     []int // every connection's descriptor, closed by close
}

type rawPending struct {
	ctx  context.Context
	buf  []byte
	done func(benchutil.Response)
}

// coalesceReads is how long the loop lets answers gather after a batch
// that was not full. An answer's time is taken when the loop reads it, so
// this can only make the measured latency longer.
const coalesceReads = 200 * time.Microsecond

var errReaderClosed = errors.New("raw watchers closed before the answer")

func newRawReader() (*rawReader, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	r := &rawReader{epfd: epfd, stop: make(chan struct{}), stopped: make(chan struct{}), pending: make(map[int32]*rawPending)}
	go r.loop()
	return r, nil
}

// await hands conn's socket to the loop, which calls done with its answer.
func (r *rawReader) await(ctx context.Context, conn *net.TCPConn, done func(benchutil.Response)) {
	fd, err := detach(conn)
	if err != nil {
		done(benchutil.Response{Err: err})
		return
	}
	p := &rawPending{ctx: ctx, buf: make([]byte, 0, 2048), done: done}
	r.mu.Lock()
	r.pending[int32(fd)] = p
	r.fds = append(r.fds, fd)
	r.mu.Unlock()
	// One-shot: the loop re-arms a connection only when its answer is
	// still incomplete, and never has to remove one.
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
	if err := syscall.EpollCtl(r.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		r.finish(fd, benchutil.Response{Err: fmt.Errorf("epoll_ctl: %w", err)})
	}
}

// detach returns a duplicate of conn's descriptor (non-blocking, as Go made
// the socket) and closes conn, which leaves the socket open through it.
func detach(conn *net.TCPConn) (int, error) {
	defer conn.Close()
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, dupErr := -1, error(nil)
	if err := raw.Control(func(s uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			dupErr = fmt.Errorf("duplicating the connection's descriptor: %w", errno)
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, err
	}
	return fd, dupErr
}

func (r *rawReader) loop() {
	defer close(r.stopped)
	events := make([]syscall.EpollEvent, 256)
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		n, err := syscall.EpollWait(r.epfd, events, 100)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			r.failAll(fmt.Errorf("epoll_wait: %w", err))
			return
		}
		if n == 0 {
			r.expire()
		}
		for _, ev := range events[:n] {
			r.read(int(ev.Fd))
		}
		if n > 0 && n < len(events) {
			// Fewer answers came than the loop takes at once: let more
			// gather before the next wait. On loopback the server's write
			// runs the receiving side too, and each answer to a loop
			// asleep in epoll_wait wakes its thread inside that write;
			// a remote client costs the server no such wake-up. Against
			// the server at db4ef21 (-rounds=1 fan-outs of 10,000
			// raw watchers, alternated): the loadgen's CPU 78-93 ms ->
			// 46-50 ms, the server's 266-315 ms -> 248-285 ms.
			time.Sleep(coalesceReads)
		}
	}
}

// read reads what fd has and finishes its answer when it is complete.
func (r *rawReader) read(fd int) {
	r.mu.Lock()
	p := r.pending[int32(fd)]
	r.mu.Unlock()
	if p == nil {
		return
	}
	for {
		if len(p.buf) == cap(p.buf) {
			p.buf = append(p.buf, 0)[:len(p.buf)]
		}
		n, err := syscall.Read(fd, p.buf[len(p.buf):cap(p.buf)])
		if n > 0 {
			p.buf = p.buf[:len(p.buf)+n]
			if resp, complete := parseRawResponse(p.buf); complete {
				r.finish(fd, resp)
				return
			}
			continue
		}
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
			if err := syscall.EpollCtl(r.epfd, syscall.EPOLL_CTL_MOD, fd, &ev); err != nil {
				r.finish(fd, benchutil.Response{Err: fmt.Errorf("epoll_ctl: %w", err)})
			}
			return
		case nil:
			r.finish(fd, benchutil.Response{Err: fmt.Errorf("connection closed after %d bytes of the response", len(p.buf))})
		default:
			r.finish(fd, benchutil.Response{Err: fmt.Errorf("reading the response after %d bytes: %w", len(p.buf), err)})
		}
		return
	}
}

// finish calls fd's done once.
func (r *rawReader) finish(fd int, resp benchutil.Response) {
	r.mu.Lock()
	p := r.pending[int32(fd)]
	delete(r.pending, int32(fd))
	r.mu.Unlock()
	if p != nil {
		p.done(resp)
	}
}

// expire fails the answers whose context has ended; the loop calls it when
// nothing has arrived for a while.
func (r *rawReader) expire() {
	type ended struct {
		fd  int
		err error
	}
	var due []ended
	r.mu.Lock()
	for fd, p := range r.pending {
		if err := p.ctx.Err(); err != nil {
			due = append(due, ended{int(fd), err})
		}
	}
	r.mu.Unlock()
	for _, e := range due {
		r.finish(e.fd, benchutil.Response{Err: fmt.Errorf("no answer: %w", e.err)})
	}
}

func (r *rawReader) failAll(err error) {
	r.mu.Lock()
	fds := make([]int32, 0, len(r.pending))
	for fd := range r.pending {
		fds = append(fds, fd)
	}
	r.mu.Unlock()
	for _, fd := range fds {
		r.finish(int(fd), benchutil.Response{Err: err})
	}
}

// close stops the loop, fails what is still awaited and closes every
// connection.
func (r *rawReader) close() {
	close(r.stop)
	<-r.stopped
	r.failAll(errReaderClosed)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, fd := range r.fds {
		syscall.Close(fd)
	}
	r.fds = nil
	syscall.Close(r.epfd)
}
