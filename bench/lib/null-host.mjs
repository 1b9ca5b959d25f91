// The `ExecutionHost` of the isolation benchmark's runs (bench/isolation.mjs, bench/isolation-child.mjs): a run of
// the bench tools needs no status, journal, owner state, questions or ledger, so every operation answers nothing.
export const NULL_HOST = Object.freeze({
  setStatus() {},
  progress() {},
  log() {},
  getStep: async () => undefined,
  putStep: async () => {},
  getOwnerState: async () => undefined,
  putOwnerState: async () => {},
  elicit: async () => ({ answers: [] }),
  openOperation: async () => {
    throw new Error('no ledger in the benchmark');
  },
  settleOperation: async () => undefined,
});
