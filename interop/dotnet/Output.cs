using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace CosmosInterop;

/// <summary>
/// The harness's only way to talk to the Node tests: one JSON object per line on stdout. Lines from several
/// threads (the processor's handlers and notifications run on the thread pool) never interleave.
/// </summary>
internal static class Output
{
    private static readonly object Gate = new();

    public static void Line(object value)
    {
        string text = JsonConvert.SerializeObject(value, Formatting.None);
        lock (Gate)
        {
            Console.Out.Write(text);
            Console.Out.Write('\n');
            Console.Out.Flush();
        }
    }

    public static void Event(string ev, JObject fields)
    {
        fields["ev"] = ev;
        Line(fields);
    }
}
