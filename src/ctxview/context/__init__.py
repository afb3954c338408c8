"""The context as sent: the message list the model is sent at each request, folded from stored events."""
