"""Claude over the native Messages API, as a provider plugin (``plugin``): requests converted from
the OpenAI shapes the loop speaks (``convert``), answers and stream events converted back
(``replies``), the SDK client behind ``chat.completions.create`` (``client``), its errors worded
for the classifier (``errors``), thinking blocks kept for tool loops (``thinking``), the converted
history kept between requests (``history_cache``), the model list (``models``)."""
