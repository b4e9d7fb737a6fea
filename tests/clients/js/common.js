// What the drivers share: a call's outcome (what it answered, or the error it raised) and the end
// of a run (what the driver saw, as JSON on the last line; a throw fails the run).
process.env.MEM0_TELEMETRY = "false";

async function outcome(call) {
  try {
    return { ok: await call() };
  } catch (error) {
    return { raised: error.constructor.name, message: String(error.message).slice(0, 300) };
  }
}

function run(main) {
  main(process.argv.slice(2)).then(
    (seen) => console.log(JSON.stringify(seen)),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

module.exports = { outcome, run };
