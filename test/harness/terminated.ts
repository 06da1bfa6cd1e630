/**
 * The test runner stops a file that outlives its time-out with SIGTERM, and node's default for
 * SIGTERM ends the process without its 'exit' handlers: the servers the harnesses started (each
 * harness kills its own on 'exit') would outlive the file and keep running through the rest of the
 * suite. Imported by every harness that starts a server: SIGTERM becomes an exit (143, as the shell
 * reports a SIGTERM), so those handlers run. A module runs once, so this is installed once per file.
 */
process.once('SIGTERM', () => process.exit(143));
