package nsguard

// heldStack is the room the held path reserves on the stack at its top, in bytes: enough for
// the next plugin, the decision, a refusal or a log line and the write, so that the stack
// need not grow again under them. Under CoreDNS's server and the plugins before nsguard it
// takes the query's goroutine to a 16 KB stack.
const heldStack = 6 << 10

// spill is never set: reserveStack's call to it is there only for the room it reserves.
var spill bool

// reserveStack grows the stack of a held query, if it must grow, here, with few frames on it.
// Each query runs on a fresh goroutine whose stack starts small and doubles as it deepens;
// every doubling copies the stack frame by frame, and the runtime reads each frame's tables
// to move it, so a copy costs by the frames on the stack, about as much as the rest of a
// cached answer. Left to itself the held path's stack grows deep in the next plugin, or
// twice. The reservation is a frame of heldStack bytes that nothing writes: the argument
// area of a call that is never made. When the stack is already large enough it costs a call.
//
//go:noinline
func reserveStack() {
	if spill {
		spillStack([heldStack]byte{})
	}
}

//go:noinline
func spillStack([heldStack]byte) {}
