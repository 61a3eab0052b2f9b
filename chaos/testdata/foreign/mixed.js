// mixed.js: one node-redisson step of the mixed-fleet test
// (chaos/mixed_test.go), printing one JSON line when done.
//
// Usage: node mixed.js HOST PORT hold NAME MS   take the lock, print
//                                               {"held":true}, hold it MS
//                                               ms, unlock, print
//                                               {"unlocked":true}
//        node mixed.js HOST PORT wait NAME MS   tryLock waiting up to MS ms
//                                               (woken by the holder's
//                                               release), print {"got":bool,
//                                               "ms":waited}, then unlock
'use strict';
const { Redisson } = require('node-redisson');

const [host, port, step, name, msArg] = process.argv.slice(2);
const ms = Number(msArg);
const redisson = new Redisson({ redis: { options: { host, port: Number(port) } } });
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

async function main() {
  const lock = redisson.getLock(name);
  if (step === 'hold') {
    if (!(await lock.tryLock(5000, 30000))) throw new Error('could not take the lock');
    out({ held: true });
    await new Promise((r) => setTimeout(r, ms));
    await lock.unlock();
    out({ unlocked: true });
  } else {
    const start = Date.now();
    const got = await lock.tryLock(ms, 30000);
    out({ got, ms: Date.now() - start });
    if (got) await lock.unlock();
  }
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
