/*
 * The SQL both baselines run, written once so that SQLite and PostgreSQL
 * answer the same questions with the same statements.
 *
 * Events are one row each in `events` (etype is enum event_type: 1 TENANT,
 * 2 TENANT_GONE, 3 BUDGET, 5 CLASS, 7 RESERVE, 8 RELEASE, 9 ALLOC, 10 FREE).
 * `totals` is the materialised per-namespace total of reserved and allocated
 * units per class, updated by bench_sql_totals_batch in the transaction that
 * inserted the batch (the events with seq from $1 to $2: a closed range,
 * whose selectivity a generic or statistics-less plan still estimates as
 * small, so that PostgreSQL reads the batch through the primary key instead
 * of scanning the whole table). The tenant tree is `tenants`
 * (ns, parent); `budgets` and `classes` hold the current budget keys and
 * class names. Subtree usage is a recursive CTE over `tenants`, as a team
 * without a materialised subtree total would write it.
 */
#include "tests/bench/bench.h"

_Static_assert(EV_TENANT == 1 && EV_TENANT_GONE == 2 && EV_BUDGET == 3 &&
		       EV_CLASS == 5 && EV_RESERVE == 7 && EV_RELEASE == 8 &&
		       EV_ALLOC == 9 && EV_FREE == 10,
	       "the SQL below names event types by number");

int64_t bench_weight(const char *cls)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	if (cls == NULL)
		return 1000;
	for (; *cls != '\0'; cls++)
		h = (h ^ (uint8_t)*cls) * 16777619u;
	return 1 + (int64_t)(h % 997);
}

#define TOTALS_SELECT                                                         \
	"SELECT ns, cls,"                                                     \
	" SUM(CASE WHEN etype IN (7, 8) THEN u_after - u_before ELSE 0 END)," \
	" SUM(CASE WHEN etype IN (9, 10) THEN u_after - u_before ELSE 0 END)" \
	" FROM events"

const char bench_sql_totals_batch[] =
	"INSERT INTO totals (ns, cls, reserved, allocated) " TOTALS_SELECT
	" WHERE seq BETWEEN $1 AND $2 AND etype BETWEEN 7 AND 10"
	" GROUP BY ns, cls"
	" ON CONFLICT (ns, cls) DO UPDATE SET"
	" reserved = totals.reserved + excluded.reserved,"
	" allocated = totals.allocated + excluded.allocated";

const char bench_sql_rebuild_delete[] = "DELETE FROM totals";

const char bench_sql_rebuild_insert[] =
	"INSERT INTO totals (ns, cls, reserved, allocated) " TOTALS_SELECT
	" WHERE etype BETWEEN 7 AND 10 GROUP BY ns, cls";

/* DESIGN 3.3 for namespace $1: every ancestor T (inclusive) declaring a
 * class's key bounds that class by budget - subtree usage of the class;
 * every T declaring the total key bounds every class and the total by
 * budget - subtree usage of all classes. One row per class bounded by
 * something, with the minimum, and one row with a NULL class for the total
 * (its value NULL when no ancestor declares the total key). */
const char bench_sql_remaining[] =
	"WITH RECURSIVE"
	" anc(ns) AS ("
	"  SELECT ns FROM tenants WHERE ns = $1"
	"  UNION ALL"
	"  SELECT t.parent FROM tenants t JOIN anc a ON t.ns = a.ns"
	"  WHERE t.parent IS NOT NULL),"
	" lim(ns, key, budget) AS ("
	"  SELECT b.ns, b.key, b.value FROM budgets b"
	"  JOIN anc a ON b.ns = a.ns),"
	" sub(root, ns) AS ("
	"  SELECT DISTINCT ns, ns FROM lim"
	"  UNION ALL"
	"  SELECT s.root, t.ns FROM tenants t JOIN sub s ON t.parent = s.ns),"
	" used(root, cls, u) AS ("
	"  SELECT s.root, r.cls, SUM(r.reserved) FROM sub s"
	"  JOIN totals r ON r.ns = s.ns GROUP BY s.root, r.cls),"
	" rem(cls, r) AS ("
	"  SELECT c.name, l.budget - COALESCE(u.u, 0)"
	"  FROM lim l JOIN classes c"
	"   ON l.key = c.name || '" BENCH_CLASS_SUFFIX "'"
	"  LEFT JOIN used u ON u.root = l.ns AND u.cls = c.name"
	"  UNION ALL"
	"  SELECT NULL, l.budget - COALESCE("
	"   (SELECT SUM(u.u) FROM used u WHERE u.root = l.ns), 0)"
	"  FROM lim l WHERE l.key = '" BENCH_TOTAL_KEY "')"
	" SELECT c.name, MIN(m.r) FROM classes c"
	"  JOIN rem m ON m.cls = c.name OR m.cls IS NULL GROUP BY c.name"
	" UNION ALL"
	" SELECT NULL, MIN(r) FROM rem WHERE cls IS NULL";
