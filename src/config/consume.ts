import { ConfigError } from "./checks.js";
import { CONSUME_SETTINGS, type Given, readSettings, settingName, type Values } from "./settings.js";

// `marketdata consume`'s configuration, from the settings table.

export type ConsumeFlags = Given<typeof CONSUME_SETTINGS>;
export type ConsumeConfig = Omit<Values<typeof CONSUME_SETTINGS>, "from" | "ackWait" | "progress"> & {
  servers: string;
  ackWaitSeconds: number;
  progressMs: number;
};

export function consumeConfig(flags: ConsumeFlags, env: Readonly<Record<string, string | undefined>> = {}): ConsumeConfig {
  const v = readSettings(CONSUME_SETTINGS, flags, env);
  const s = CONSUME_SETTINGS;
  if (v.from === "") throw new ConfigError(`${settingName(s.from)} is required: the NATS server(s) to consume from`);
  if (v.deadLetter === v.subjectPrefix || v.deadLetter.startsWith(`${v.subjectPrefix}.`)) {
    throw new ConfigError(`--dead-letter (${v.deadLetter}) must lie outside --subject-prefix (${v.subjectPrefix}.>): dead letters would be consumed again`);
  }
  const { from, ackWait, progress, ...rest } = v;
  return { ...rest, servers: from, ackWaitSeconds: ackWait / 1000, progressMs: progress };
}
