// Loaded into Gemini CLI by NODE_OPTIONS=--import (tests only): `new Date()` (what Gemini names
// a chat file by) runs CTXVIEW_TEST_CLOCK_AHEAD seconds ahead, or starts at CTXVIEW_TEST_CLOCK_AT
// (seconds since the epoch) when the process starts, so a run can resume in a later minute than
// the one its chat file is named by, or in the same one, without waiting for a minute to turn.
// `Date.now()` stays true: the file locks Gemini takes compare it with the files' mtimes.
const at = process.env.CTXVIEW_TEST_CLOCK_AT;
const ahead = at ? Number(at) * 1000 - Date.now() : Number(process.env.CTXVIEW_TEST_CLOCK_AHEAD || 0) * 1000;
const RealDate = Date;
class AheadDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + ahead);
    else super(...args);
  }
}
globalThis.Date = AheadDate;
