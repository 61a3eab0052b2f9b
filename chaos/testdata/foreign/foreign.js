// The chaos suite's foreign client (chaos/foreign.go): node-redisson, a
// Node.js implementation of Redisson's lock protocol not written by the
// redisync project, takes the Go workers' locks and prints every call as
// a JSON line: {"op":"lock"|"unlock","name","call","ret","ok","err"},
// times in nanoseconds since the Unix epoch.
//
// Usage: node foreign.js HOST PORT LEASE_MS SEED NAME...
// It runs until its standard input closes.
'use strict';
const { Redisson } = require('node-redisson');

const [host, port, leaseMs, seed, ...names] = process.argv.slice(2);
const lease = Number(leaseMs);
let state = Number(seed) >>> 0 || 1;
function rand(n) { // xorshift32: the choices follow the seed
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
}
const origin = BigInt(Math.round(performance.timeOrigin * 1e6));
function now() { return (origin + BigInt(Math.round(performance.now() * 1e6))).toString(); }
function emit(o) { process.stdout.write(JSON.stringify(o) + '\n'); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let stopping = false;
process.stdin.on('end', () => { stopping = true; });
process.stdin.on('close', () => { stopping = true; });
process.stdin.resume();

// A command node-redisson sends on its own (a subscription, a publish)
// and nobody awaits fails under the suite's faults with "Command timed
// out"; Node would end the process on that unhandled rejection, and the
// locks would no longer be shared with a foreign client. It is reported
// and the calls go on: each call's own failure is caught in worker.
let unhandled = 0;
process.on('unhandledRejection', (e) => {
  unhandled++;
  process.stderr.write(`foreign: a rejection inside node-redisson nobody awaited (${unhandled}): ${e && e.message || e}\n`);
});

const redisson = new Redisson({
  redis: { options: { host, port: Number(port), maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: 2000 } },
});

// bounded is p, or a failure when it has not settled within ms: after such
// a rejection nobody awaited (above), node-redisson may leave the call it
// belonged to pending for ever. The call's outcome is then unknown, as
// any call's that failed.
function bounded(p, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from node-redisson within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

async function worker(i) {
  while (!stopping) {
    const name = names[rand(names.length)];
    const lock = redisson.getLock(name);
    const wait = rand(4) === 0 ? 0 : rand(1000);
    let call = now();
    let ok = false, err = '';
    try {
      ok = await bounded(lock.tryLock(wait, lease), wait + 10000);
    } catch (e) {
      err = String(e && e.message || e);
    }
    emit({ op: 'lock', worker: i, name, call, ret: now(), ok, err });
    if (!ok) { await sleep(10 + rand(50)); continue; }
    // Hold well within the lease: a lock taken with a lease is not renewed.
    await sleep(10 + rand(Math.max(1, Math.floor(lease / 4))));
    call = now();
    err = '';
    try {
      await bounded(lock.unlock(), 10000);
    } catch (e) {
      err = String(e && e.message || e);
    }
    emit({ op: 'unlock', worker: i, name, call, ret: now(), ok: err === '', err });
  }
}

Promise.all([worker(0), worker(1)]).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
