/**
 * Input a command (or the `tune --measure` harness, `@cosmos-feed/devhost/tune`) refuses before it starts anything:
 * the message is one line that names the flag and what it accepts. The command line prints it after its name and
 * exits 1.
 */
export class CliInputError extends Error {}
