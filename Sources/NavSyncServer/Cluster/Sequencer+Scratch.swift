import NavSync

extension Sequencer {
    /// Cluster mode (docs/cluster.md, "How it works"): a copy to run commands on before Redis has them. Its
    /// history collects what it records and its patch log starts empty, so running on it
    /// copies neither (the largest tables); `adopt` takes its revisions over.
    public func scratchCopy() -> Sequencer {
        var s = self
        s.history = .collecting(after: rev, checkpointEvery: history.checkpointEvery)
        s.log = PatchLog(capacity: 0)
        return s
    }

    /// Becomes the scratch copy, with this sequencer's history and patch log carried on
    /// by the revisions it made (`patches`, in order; those this one has already, from
    /// the same log entries, are skipped).
    public mutating func adopt(_ scratch: Sequencer, patches: [Patch]) {
        var history = self.history
        var log = self.log
        let had = rev
        self = scratch
        history.record(collectedBy: scratch.history)
        if !log.isCovered(by: history) {
            for p in patches where p.rev > had { log.append(p) }
        }
        self.history = history
        self.log = log
    }
}
