// Where a reply delivery that used its tries goes: the core's failure book
// (HooksPlugin.after.recordFailure), which lists it under /hookgate/api/failures, keeps its text for a
// replay and tells the owner "Hook <name>: delivery failed after <n> attempts". Before the plugin is up
// (not expected: a delivery fails first while its run is) the log says so, naming the run.
import type { HooksPlugin } from '../../host-kit.ts';
import type { Logger } from '../../host.ts';
import { errorMessage } from '../../util/errors.ts';
import type { DeliveryDeadLetter } from './deliveries.ts';

export function deliveryDeadLetters(
  plugin: () => HooksPlugin | undefined,
  logger: Logger,
): (letter: DeliveryDeadLetter) => void {
  return (letter) => {
    const fields = {
      runId: letter.runId,
      hook: letter.hook,
      channel: letter.channel,
      attempts: letter.attempts,
      reason: letter.lastError,
    };
    const current = plugin();
    if (!current) {
      logger.error('a reply delivery failed for good', fields);
      return;
    }
    current.after
      .recordFailure(letter)
      .catch((err: unknown) =>
        logger.error('a failed delivery could not be recorded', { ...fields, why: errorMessage(err) }),
      );
  };
}
