// This folder's suites, run by the same Mocha entry point as test/suite (it reads its own folder).
export { run } from '../suite/index';
