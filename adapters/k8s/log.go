package k8s

import (
	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The messages of the engine's log lines (deletion.Options.Logger) that
// record what became of a PU: a destroy, a PU given up on, a destroy the
// Confirmer or the SandboxConfirmer vetoed, and a destroy a dry run would
// have made. The vetoes are logged at V(1) (--zap-log-level=debug), the
// others at info.
const (
	LogMessageDestroyed           = "PU destroyed"
	LogMessageAbandoned           = "destroying PU failed for the last time; dropping it, the policy engine may still hold it"
	LogMessageDestroyNotConfirmed = "destroy not confirmed; keeping PU"
	LogMessageSandboxNotConfirmed = "sandbox change not confirmed; keeping PU"
	LogMessageDryRunWouldDestroy  = "dry run: PU would be destroyed"
)

// EngineRecordMessages returns the messages of the engine's lines that
// record what became of a PU (the LogMessage constants), for NewLogger: an
// operator who greps the log for a PU finds every one of them.
func EngineRecordMessages() []string {
	return []string{LogMessageDestroyed, LogMessageAbandoned, LogMessageDestroyNotConfirmed, LogMessageSandboxNotConfirmed,
		LogMessageDryRunWouldDestroy}
}

// NewLogger returns the logger that controller-runtime's zap.New(opts...)
// returns, except that its sampling never drops a line whose message is one
// of unsampled. Where zap.New samples (its production mode, the default,
// unless V(2) or more is enabled) it keeps, of the lines of one message and
// level, the first 100 in each second and then one in 100: in a drain of
// 1,000 pods, about half of the lines that record a destroy. The lines of
// unsampled are written in full; every other message is sampled as before.
// Where zap.New does not sample (--zap-devel, or a level of 2 and more),
// NewLogger's logger is zap.New's.
//
// Pass EngineRecordMessages, and the messages of the program's own lines
// that record a destroy, as unsampled.
func NewLogger(unsampled []string, opts ...crzap.Opts) logr.Logger {
	// The core that zap.New's sampler would wrap: the options' own, marked
	// so that the logger built from it shows whether a sampler came on top.
	var base *markedCore
	mark := crzap.RawZapOpts(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		base = &markedCore{Core: c}
		return base
	}))
	// After the caller's options: UseFlagOptions replaces every option
	// given before it.
	raw := crzap.NewRaw(append(append([]crzap.Opts(nil), opts...), mark)...)
	if base == nil || raw.Core() == zapcore.Core(base) || len(unsampled) == 0 {
		return zapr.NewLogger(raw)
	}
	keep := make(map[string]struct{}, len(unsampled))
	for _, m := range unsampled {
		keep[m] = struct{}{}
	}
	core := &unsampledCore{sampled: raw.Core(), all: base.Core, keep: keep}
	return zapr.NewLogger(raw.WithOptions(zap.WrapCore(func(zapcore.Core) zapcore.Core { return core })))
}

// markedCore is the core below zap.New's sampler, as it is.
type markedCore struct{ zapcore.Core }

// unsampledCore sends the entries whose message is in keep to all, which
// writes every one, and the others to sampled, the sampler on top of all.
type unsampledCore struct {
	sampled, all zapcore.Core
	keep         map[string]struct{}
}

var _ zapcore.Core = (*unsampledCore)(nil)

// Enabled is the level of the cores (the sampler's is its core's).
func (c *unsampledCore) Enabled(l zapcore.Level) bool { return c.all.Enabled(l) }

// With adds fields to both cores; the sampler's counts stay shared, as
// zap's sampler shares them between its children.
func (c *unsampledCore) With(fields []zapcore.Field) zapcore.Core {
	return &unsampledCore{sampled: c.sampled.With(fields), all: c.all.With(fields), keep: c.keep}
}

// Check routes ent by its message.
func (c *unsampledCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if _, ok := c.keep[ent.Message]; ok {
		return c.all.Check(ent, ce)
	}
	return c.sampled.Check(ent, ce)
}

// Write is never called: Check hands each entry to the core that writes it.
func (c *unsampledCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	return c.all.Write(ent, fields)
}

// Sync flushes the cores' output, which they share.
func (c *unsampledCore) Sync() error { return c.all.Sync() }
