// Every pg Pool the tests open ignores errors of idle clients: dropping a test database at the end
// terminates its connections (57P01), which a pool without an error listener would throw as an
// unhandled error long after the test that used it passed. Errors of queries still reach the queries.
import pg from "pg";

const Base = pg.Pool;
class QuietPool extends Base {
  constructor(...args: ConstructorParameters<typeof Base>) {
    super(...args);
    this.on("error", () => {});
  }
}
(pg as { Pool: typeof Base }).Pool = QuietPool;
