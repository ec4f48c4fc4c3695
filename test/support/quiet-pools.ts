// Every pg Pool the tests open ignores errors of idle clients: dropping a test database at the end
// terminates its connections (57P01), which a pool without an error listener would throw as an
// unhandled error long after the test that used it passed. Errors of queries still reach the queries.
import pg from "pg";

// Once per process: the suite runs its files one after another in each process (isolate: false), and this
// setup runs before each of them.
const QUIET = Symbol.for("akadze.test.quietPool");
const Base = pg.Pool;
if (!(QUIET in Base)) {
  class QuietPool extends Base {
    static readonly [QUIET] = true;
    constructor(...args: ConstructorParameters<typeof Base>) {
      super(...args);
      this.on("error", () => {});
    }
  }
  (pg as { Pool: typeof Base }).Pool = QuietPool;
}
