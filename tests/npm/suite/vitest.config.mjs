// vitest for tests/npm.rs's suites: the CommonJS suite takes `test` from the globals (vitest
// cannot be required), the ES module one imports it.
export default {
  test: {
    include: ["*.vitest.test.mjs", "*.vitest.test.cjs"],
    globals: true,
    testTimeout: 60000,
    hookTimeout: 60000,
  },
};
