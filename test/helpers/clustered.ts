/** Generated clustered data for tests (the library's seeded generator). */
export { clusteredFloats as clusteredData } from '../../src/common/random.js';
