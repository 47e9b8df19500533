// node load.mjs VERSION FILE: loads a FOCUS CSV of `gpuledger export
// --focus-version VERSION` (1.2 or 1.3) into DuckDB the way an analyst
// would, with an explicit schema (the types docs/billing.md documents) and
// strict parsing, and prints on stdout one JSON object saying what DuckDB
// read: {"loaded": true, "rows", "sums": {column: text}, "values": {column:
// [text...]}, "pools": [...]} (exit 0), or {"loaded": false, "error"} (exit
// 1). tests/duckdb/check.py compares it with the CSV.
//
// It runs from build/npm-duckdb (tests/duckdb_cli.sh copies it there), beside
// the node_modules it imports.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';

// The documented types. Costs, prices and quantities are decimals with 9
// decimals (docs/billing.md: quantities are device-ms / 3,600,000 truncated
// to 9 decimals, prices have at most 9, costs are rounded half up to 9); the
// docs bound no integer part, so the precision is DuckDB's widest, 38.
// DateTimes are FOCUS's YYYY-MM-DDTHH:mm:ssZ, read with that exact format
// below (a time without the Z, with an offset or a fraction fails). The
// columns shown as JSON objects are JSON; seqs and device-ms are integers
// ("Other formats"); anything else is text.
const DEC = 'DECIMAL(38,9)';
const TIME = 'TIMESTAMP';
const TYPES = {
	AllocatedMethodDetails: 'JSON',
	AllocatedTags: 'JSON',
	BilledCost: DEC,
	BillingPeriodEnd: TIME,
	BillingPeriodStart: TIME,
	ChargePeriodEnd: TIME,
	ChargePeriodStart: TIME,
	ConsumedQuantity: DEC,
	ContractedCost: DEC,
	ContractedUnitPrice: DEC,
	EffectiveCost: DEC,
	ListCost: DEC,
	ListUnitPrice: DEC,
	PricingQuantity: DEC,
	SkuPriceDetails: 'JSON',
	Tags: 'JSON',
	x_DeviceMilliseconds: 'BIGINT',
	x_LedgerSeqEnd: 'UBIGINT',
	x_LedgerSeqStart: 'UBIGINT',
};
// The columns, in the documented order: the FOCUS ones in alphabetical
// order, then gpuledger's (the table of docs/billing.md "Columns"; 1.3 adds
// the columns of "FOCUS 1.3: the pool split" among the FOCUS ones).
const FOCUS_1_2 = [
	'BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency',
	'BillingPeriodEnd', 'BillingPeriodStart', 'ChargeCategory', 'ChargeClass',
	'ChargeDescription', 'ChargeFrequency', 'ChargePeriodEnd',
	'ChargePeriodStart', 'ConsumedQuantity', 'ConsumedUnit', 'ContractedCost',
	'ContractedUnitPrice', 'EffectiveCost', 'InvoiceIssuerName', 'ListCost',
	'ListUnitPrice', 'PricingCategory', 'PricingQuantity', 'PricingUnit',
	'ProviderName', 'PublisherName', 'ResourceId', 'ResourceName',
	'ResourceType', 'ServiceCategory', 'ServiceName', 'ServiceSubcategory',
	'SkuId', 'SkuMeter', 'SkuPriceDetails', 'SkuPriceId', 'SubAccountId',
	'SubAccountName', 'SubAccountType', 'Tags',
];
const ADDED_1_3 = [
	'AllocatedMethodDetails', 'AllocatedMethodId', 'AllocatedResourceId',
	'AllocatedResourceName', 'AllocatedTags', 'HostProviderName',
	'ServiceProviderName',
];
const OURS = [
	'x_BillingPeriodStatus', 'x_TenantPath', 'x_DeviceClass', 'x_Basis',
	'x_LedgerSeqStart', 'x_LedgerSeqEnd', 'x_ChainHead',
	'x_DeviceMilliseconds',
];
// What check.py sums and reads back: the costs and quantities, the exact
// usage, and the prices (read back only).
const SUMMED = [
	'BilledCost', 'ContractedCost', 'EffectiveCost', 'ListCost',
	'ConsumedQuantity', 'PricingQuantity', 'x_DeviceMilliseconds',
];
const DECIMALS = Object.keys(TYPES).filter((c) => TYPES[c] === DEC);

function columns(version) {
	const focus = version === '1.3' ? [...FOCUS_1_2, ...ADDED_1_3].sort()
		: FOCUS_1_2;
	return [...focus, ...OURS];
}

const sqlText = (s) => "'" + s.replaceAll("'", "''") + "'";
const ident = (s) => '"' + s.replaceAll('"', '""') + '"';

async function main() {
	const [version, file] = process.argv.slice(2);
	if (!['1.2', '1.3'].includes(version) || !file) {
		console.error('usage: node load.mjs 1.2|1.3 FILE');
		process.exit(2);
	}
	const cols = columns(version);
	// read_csv takes the names from `columns` and skips the header line
	// without reading it: the header must be exactly the documented one.
	const header = readFileSync(file, 'utf8').split('\n', 1)[0];
	if (header !== cols.join(',')) {
		return {
			loaded: false,
			error: 'the header is not the documented FOCUS ' + version +
				' columns: got ' + header + '; want ' + cols.join(','),
		};
	}
	const spec = cols.map((c) => sqlText(c) + ': ' +
		sqlText(TYPES[c] ?? 'VARCHAR')).join(', ');
	// No sniffing, no skipped or padded rows, no errors ignored: a value
	// that does not fit its column's type fails the load.
	const read = `read_csv(${sqlText(file)}, columns = {${spec}},
		header = true, auto_detect = false, delim = ',', quote = '"',
		escape = '"', strict_mode = true, ignore_errors = false,
		null_padding = false, nullstr = '',
		timestampformat = '%Y-%m-%dT%H:%M:%SZ')`;
	// One thread: insertion order is the file's, so values read back
	// line up with the CSV's rows. Nothing is fetched from the network
	// (JSON is built into the package).
	const db = await DuckDBInstance.create(':memory:', {
		threads: '1',
		autoinstall_known_extensions: 'false',
	});
	const con = await db.connect();
	const rows = async (sql) =>
		(await con.runAndReadAll(sql)).getRowObjectsJson();
	try {
		await con.run(`CREATE TABLE focus AS SELECT * FROM ${read}`);
	} catch (e) {
		return { loaded: false, error: e.message };
	}
	const out = { loaded: true, sums: {}, values: {}, pools: [] };
	out.rows = Number((await rows('SELECT count(*) AS n FROM focus'))[0].n);
	for (const c of SUMMED)
		out.sums[c] = (await rows(
			`SELECT sum(${ident(c)})::VARCHAR AS s FROM focus`))[0].s;
	for (const c of DECIMALS)
		out.values[c] = (await rows(
			`SELECT ${ident(c)}::VARCHAR AS v FROM focus`)).map((r) => r.v);
	if (version === '1.3') {
		// docs/billing.md "How the ratios sum": the allocated charges of
		// one origin charge (a class's pool over one charge period) have
		// ratios that sum to exactly 1, and their device-ms sum to the
		// pool's. AllocatedRatio has 12 decimals.
		out.pools = await rows(`
			WITH d AS (
				SELECT ResourceId, ChargePeriodStart, ChargePeriodEnd,
					x_Basis, from_json(AllocatedMethodDetails, '{
					"Elements": [{"AllocatedRatio": "DECIMAL(13,12)",
						      "x_DeviceMilliseconds": "BIGINT"}],
					"x_PoolDeviceMilliseconds": "BIGINT"}') AS j
				FROM focus WHERE AllocatedMethodId IS NOT NULL),
			e AS (
				SELECT *, j.x_PoolDeviceMilliseconds AS pool_ms,
					unnest(j.Elements) AS el
				FROM d)
			SELECT ResourceId AS pool, ChargePeriodStart::VARCHAR AS start,
				count(*)::INTEGER AS n,
				sum(el.AllocatedRatio)::VARCHAR AS ratio_sum,
				sum(el.x_DeviceMilliseconds)::VARCHAR AS ms_sum,
				min(pool_ms)::VARCHAR AS pool_ms_min,
				max(pool_ms)::VARCHAR AS pool_ms_max
			FROM e
			GROUP BY ResourceId, ChargePeriodStart, ChargePeriodEnd, x_Basis
			ORDER BY 1, 2`);
	}
	return out;
}

// Exit 0: loaded and read; 1: the load was refused; 3: loaded, but a query
// after it failed (its error in the report); anything else: node broke.
let out;
try {
	out = await main();
} catch (e) {
	out = { loaded: true, error: 'after the load: ' + e.message };
}
console.log(JSON.stringify(out));
process.exit(!out.loaded ? 1 : out.error ? 3 : 0);
