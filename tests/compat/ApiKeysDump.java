// Prints Apache Kafka's API keys as `id<TAB>name<TAB>listeners` lines (listeners: BROKER, CONTROLLER),
// from the kafka-clients jar on the class path. Used by tests/compat/generate:
//   java -cp '<kafka libs>/*' tests/compat/ApiKeysDump.java
import org.apache.kafka.common.protocol.ApiKeys;

public class ApiKeysDump {
    public static void main(String[] args) {
        for (ApiKeys key : ApiKeys.values()) {
            System.out.println(key.id + "\t" + key.name + "\t" + key.messageType.listeners());
        }
    }
}
