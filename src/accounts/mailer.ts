import nodemailer from 'nodemailer';
import type { Logger } from 'pino';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends account mail (verification links). */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/**
 * With no SMTP server configured: the mail goes to the server log, marked as not sent. In production its
 * text (which holds verification tokens) is left out: logs travel further than mail should.
 */
export function createLogMailer(logger: Logger, options: { withText: boolean } = { withText: true }): Mailer {
  return {
    async send(mail) {
      if (!options.withText) {
        logger.warn(
          { subject: mail.subject },
          'e-mail NOT sent (no SMTP_URL set); production mode: text not logged',
        );
        return;
      }
      logger.info(
        { to: mail.to, subject: mail.subject, text: mail.text },
        'e-mail NOT sent (no SMTP_URL set); its text is logged instead',
      );
    },
  };
}

/** Sends through the SMTP server an `smtp://user:pass@host:port` URL names. */
export function createSmtpMailer(smtpUrl: string, from: string): Mailer {
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    async send(mail) {
      await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}
