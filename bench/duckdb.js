// SPDX-License-Identifier: BSD-2-Clause
// bench/duckdb.js - DuckDB (npm @duckdb/node-api, pinned in tests/) as a
// benchmark peer, driven line by line so that its runs alternate with the
// other commands' in the same run (bench/query).
//
//   node bench/duckdb.js ROWS.CSV       (tests/node_modules must hold it)
//
// Loads ROWS.CSV (k,x,s with a header) into an in-memory table t(k BIGINT,
// x DOUBLE, s VARCHAR), prints "ready", then reads lines "OUT<TAB>SQL":
// runs SQL on t, writes its rows tab-separated to OUT (none when OUT is
// "-"), and prints the wall seconds the query took, warm, in the process
// (no start-up: what a user of an open DuckDB session sees).
'use strict';
const path = require('path');
const fs = require('fs');
const readline = require('readline');
const { DuckDBInstance } = require(path.join(__dirname, '..', 'tests', 'node_modules', '@duckdb', 'node-api'));

async function main() {
  const csv = process.argv[2];
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  await con.run(`CREATE TABLE t AS SELECT * FROM read_csv('${csv.replace(/'/g, "''")}', header = true,
    columns = {'k': 'BIGINT', 'x': 'DOUBLE', 's': 'VARCHAR'})`);
  process.stdout.write('ready\n');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const tab = line.indexOf('\t');
    const out = line.slice(0, tab), sql = line.slice(tab + 1);
    const t0 = process.hrtime.bigint();
    const reader = await con.runAndReadAll(sql);
    const rows = reader.getRowsJS();
    const secs = Number(process.hrtime.bigint() - t0) / 1e9;
    if (out !== '-') fs.writeFileSync(out, rows.map((r) => r.map(String).join('\t')).join('\n') + '\n');
    process.stdout.write(`${secs.toFixed(6)}\n`);
  }
  con.closeSync();
  db.closeSync();
}
main().catch((e) => { process.stderr.write(`bench/duckdb.js: ${e.message}\n`); process.exit(1); });
