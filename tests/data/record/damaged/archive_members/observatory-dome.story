The Halvard Observatory on the island of Runde replaced its wooden dome on Wednesday with a new aluminium shell built by the Fjordlight Engineering company. Astronomer Ingrid Sande said the telescope would be back in use before the autumn meteor showers.

Sande said schoolchildren from across Norway would be invited to the reopening.

@highlight

Halvard Observatory gets a new dome