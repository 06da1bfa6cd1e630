/**
 * Prints the outage matrix (see test/harness/outage.ts): for each fault, client major and call,
 * how long the call took to end and with what error. `npm run bench:outage`; `--json` for a file.
 */
import { CALLS, CLIENTS, FAULTS, measure, type Outcome } from '../test/harness/outage.js';

interface Row {
  readonly fault: string;
  readonly client: string;
  readonly call: string;
  readonly outcome: Outcome;
}

const rows: Row[] = [];
// Every scenario mostly sleeps on timers: running one fault × client at a time, its calls side by
// side, keeps the whole matrix under a minute without the scenarios disturbing each other.
for (const fault of FAULTS) {
  for (const client of CLIENTS) {
    const outcomes = await Promise.all(CALLS.map((call) => measure(client, fault, call)));
    outcomes.forEach((outcome, i) => rows.push({ fault, client, call: CALLS[i]!, outcome }));
  }
}

if (process.argv.includes('--json')) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  console.log('| fault | client | call | ends after | error (cause) |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const { fault, client, call, outcome } of rows) {
    const seconds = (outcome.ms / 1000).toFixed(outcome.ms < 10_000 ? 2 : 1);
    const cause = outcome.cause === undefined ? '' : ` (${outcome.cause})`;
    console.log(`| ${fault} | ${client} | \`${call}\` | ${seconds} s | ${outcome.error}${cause} |`);
  }
}
