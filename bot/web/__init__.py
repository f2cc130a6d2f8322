"""Every HTTP page and route of the bot except Twilio's webhooks (bot.channel.web): the renderer and
its templates (`render`, `templates/`), the dashboard (`admin`), the signed progress page
(`progress_page`), a background job's page and its stream (`job_page`, `job_stream`), the local
provider's pay page (`pay_page`) and the providers' payment webhook (`payment_webhook`); who a
request comes from, for the limits kept per client (`clients`)."""

__all__ = ["admin", "clients", "job_page", "job_stream", "pay_page", "payment_webhook", "progress_page",
           "render"]
